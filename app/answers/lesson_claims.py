"""GET /api/lessons/{chapter}/claims: what a chapter asks the class to look at, measured on its view.

A thin adapter over lessons/: plan() picks the chapter's view in the page's language and checks it fits the
model; the builder turns the traced run into a lessons.view.View and returns lessons.claims.measured() — each
claim, whether it holds, its values and its line in that language — with the view's place on the path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app import errors
from app.inference_pool import TraceRun
from app.resolve import Resolved
from app.tokenizing import encode_text
from lessons.chapters import Chapter
from lessons.claims import measured
from lessons.view import ClaimError, View


def plan(resolved: Resolved, number: int, chapter: Chapter, lang: str) -> Callable[[TraceRun], dict[str, Any]]:
    view = chapter.in_lang(lang)
    cfg = resolved.cfg
    n_layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    if not (view.layer < n_layers and view.head < cfg.n_heads):
        raise errors.not_in_model(f"Chapter {chapter.id} opens layer {view.layer}, head {view.head}, which "
                                  f"{resolved.name} does not have.")
    loaded = resolved.loaded

    def build(run: TraceRun) -> dict[str, Any]:
        enc_dec = run.target_tokens is not None
        on_screen = View(
            model=loaded.model, trace=run.trace, lang=lang, layer=view.layer, head=view.head,
            stack="decoder" if enc_dec else None,
            tokens=run.target_tokens if enc_dec else run.tokens,  # type: ignore[arg-type]
            text=(view.target or "") if enc_dec else view.text,
            source_tokens=run.tokens if enc_dec else (), source_text=view.text if enc_dec else "",
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
