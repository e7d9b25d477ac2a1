"""GET /api/lessons/{chapter}/claims: what a chapter asks the class to look at, measured on its view.

The service finds the chapter and its view in the page's language (`view_request`, then Service.run), or the
view on screen where the page names one (its text, model, layer, head: the class typed its own sentence), so no
line the lesson bar prints goes stale; plan() checks the view's layer and head against the model; the builder
turns the text's forward pass into a lessons.view.View and returns lessons.claims.measured(): each claim, whether
it holds, its values, its line in that language and where it is drawn, with the view's place on the path. The
teaching logic lives in lessons/.
"""

from __future__ import annotations

from typing import Any

from app import errors
from app.pipeline import Build, Context, Endpoint, Run
from app.schemas import LessonClaimsOut, LessonView
from app.tokenizing import encode_text
from lessons import chapters as lessons
from lessons.chapters import Chapter
from lessons.claims import measured
from lessons.view import ClaimError, View


def view_request(chapter_id: str, lang: str, offered: list[str], screen: dict[str, Any] | None = None) -> LessonView:
    """The chapter (by id, or by number from 1) and its view in `lang`, as a request about its text, with what
    `screen` names of the view on screen (text, target, model, layer, head) in place of the chapter's: 404 for a
    chapter there is none of, or one whose model this server does not offer (when the view names no other)."""
    found = lessons.find(chapter_id)
    if found is None:
        raise errors.unknown_chapter([c.id for c in lessons.chapters()])
    chapter = found[1]
    view = chapter.in_lang(lang)
    own = {"model": view.model, "text": view.text, "target_text": view.target, "layer": view.layer,
           "head": view.head}
    asked = own | {k: v for k, v in (screen or {}).items() if v is not None}
    if asked["model"] not in offered and asked["model"] == view.model:
        raise errors.chapter_model_missing(chapter.id, view.model)
    return LessonView.model_validate({**asked, "chapter": chapter.id, "lang": lang, "own": asked == own})


def checked(context: Context, request: LessonView) -> tuple[int, Chapter]:
    """The chapter (its place on the path) and the view's layer and head checked against the model: 422 else."""
    resolved = context.model
    found = lessons.find(request.chapter)
    if found is None:  # view_request found it
        raise errors.unknown_chapter([c.id for c in lessons.chapters()])
    number, chapter = found
    cfg = resolved.cfg
    n_layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    layer, head = request.layer, request.head
    if not (layer < n_layers and head < cfg.n_heads):
        opens = f"Chapter {chapter.id} opens" if request.own else "The view asked is"
        raise errors.not_in_model(f"{opens} layer {layer}, head {head}, which {resolved.name} does not have "
                                  f"({n_layers} layers of {cfg.n_heads} heads).")
    return number, chapter


def on_screen(run: Run, request: LessonView) -> View:
    """The text's forward pass as a lessons.view.View: the stack on screen (an encoder-decoder's decoder, with its
    source as cross-attention's keys), its layer and head, and what a kind may ask of the model."""
    loaded = run.resolved.loaded if run.resolved is not None else None
    if loaded is None:
        raise RuntimeError("a lesson view is built from a text's run")
    forward = run.trace()
    enc_dec = forward.target_tokens is not None
    return View(
        model=loaded.model, trace=forward.trace, lang=request.lang, layer=request.layer, head=request.head,
        stack="decoder" if enc_dec else None,
        tokens=forward.target_tokens if enc_dec else forward.tokens,  # type: ignore[arg-type]
        text=(request.target_text or "") if enc_dec else request.text,
        source_tokens=forward.tokens if enc_dec else (), source_text=request.text if enc_dec else "",
        piece=loaded.tokenizer.id_to_text, meta=loaded.meta,
        encode=lambda text: encode_text(loaded, text))  # a second prompt (patching's corrupted one)


def answered(number: int, chapter: Chapter, request: LessonView, model: str) -> dict[str, Any]:
    """What a lesson answer says of its view: the chapter, its place, the language, model, text, layer and head."""
    return {"chapter": chapter.id, "own": request.own, "number": number + 1, "lang": request.lang, "model": model,
            "text": request.text, "target": request.target_text, "stage": chapter.stage, "layer": request.layer,
            "head": request.head}


def plan(context: Context, request: LessonView) -> Build:
    number, chapter = checked(context, request)
    view = chapter.in_lang(request.lang)

    def build(run: Run) -> dict[str, Any]:
        try:
            claims = measured(on_screen(run, request), view.claims, own=request.own)
        except ClaimError as error:
            raise errors.not_in_model(f"Chapter {chapter.id}: {error}.") from error
        return answered(number, chapter, request, context.model.name) | {"claims": claims}

    return build


LESSON_CLAIMS = Endpoint(
    name="chapter_claims", method="GET", route="/api/lessons/{chapter}/claims", tag="lessons", request=LessonView,
    response=LessonClaimsOut, plan=plan,
    summary="What the chapter asks the class to look at, measured on its view: each claim, whether it holds, its\n"
            'values and the line the lesson bar prints (a chapter by id, "why", or number, "1"). Given the view\n'
            "on screen (text, model, layer, head), its chart's claims are measured again on it; lab claims and\n"
            "those whose words that sentence lacks are marked on_view false (they belong to the lesson's sentence).")
