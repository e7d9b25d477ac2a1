"""GET /api/lessons/{chapter}/claims: what a chapter asks the class to look at, measured on its view.

The service finds the chapter and its view in the page's language (`view_request`, then Service.run); plan()
checks the view's layer and head against the model; the builder turns the text's forward pass into a
lessons.view.View and returns lessons.claims.measured(): each claim, whether it holds, its values and its line
in that language, with the view's place on the path. The teaching logic lives in lessons/.
"""

from __future__ import annotations

from typing import Any

from app import errors
from app.pipeline import Build, Context, Endpoint, Run
from app.schemas import LessonClaimsOut, LessonView
from app.tokenizing import encode_text
from lessons import chapters as lessons
from lessons.claims import measured
from lessons.view import ClaimError, View


def view_request(chapter_id: str, lang: str, offered: list[str]) -> LessonView:
    """The chapter (by id, or by number from 1) and its view in `lang`, as a request about its text: 404 for a
    chapter there is none of, or one whose model this server does not offer."""
    found = lessons.find(chapter_id)
    if found is None:
        raise errors.unknown_chapter([c.id for c in lessons.chapters()])
    chapter = found[1]
    view = chapter.in_lang(lang)
    if view.model not in offered:
        raise errors.chapter_model_missing(chapter.id, view.model)
    return LessonView.model_validate({"model": view.model, "text": view.text, "target_text": view.target,
                                      "chapter": chapter.id, "lang": lang})


def plan(context: Context, request: LessonView) -> Build:
    resolved, lang = context.model, request.lang
    found = lessons.find(request.chapter)
    if found is None:  # view_request found it
        raise errors.unknown_chapter([c.id for c in lessons.chapters()])
    number, chapter = found
    view = chapter.in_lang(lang)
    cfg = resolved.cfg
    n_layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    if not (view.layer < n_layers and view.head < cfg.n_heads):
        raise errors.not_in_model(f"Chapter {chapter.id} opens layer {view.layer}, head {view.head}, which "
                                  f"{resolved.name} does not have.")
    loaded = resolved.loaded

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        enc_dec = forward.target_tokens is not None
        on_screen = View(
            model=loaded.model, trace=forward.trace, lang=lang, layer=view.layer, head=view.head,
            stack="decoder" if enc_dec else None,
            tokens=forward.target_tokens if enc_dec else forward.tokens,  # type: ignore[arg-type]
            text=(view.target or "") if enc_dec else view.text,
            source_tokens=forward.tokens if enc_dec else (), source_text=view.text if enc_dec else "",
            piece=loaded.tokenizer.id_to_text, meta=loaded.meta,
            encode=lambda text: encode_text(loaded, text))  # a second prompt (patching's corrupted one)
        try:
            claims = measured(on_screen, view.claims)
        except ClaimError as error:
            raise errors.not_in_model(f"Chapter {chapter.id}: {error}.") from error
        return {"chapter": chapter.id, "number": number + 1, "lang": lang, "model": resolved.name,
                "text": view.text, "target": view.target, "stage": chapter.stage, "layer": view.layer,
                "head": view.head, "claims": claims}

    return build


LESSON_CLAIMS = Endpoint(
    name="chapter_claims", method="GET", route="/api/lessons/{chapter}/claims", tag="lessons", request=LessonView,
    response=LessonClaimsOut, plan=plan,
    summary="What the chapter asks the class to look at, measured on its view: each claim, whether it holds, its\n"
            'values and the line the lesson bar prints (a chapter by id, "why", or number, "1").')
