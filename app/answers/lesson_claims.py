"""GET /api/lessons/{chapter}/claims: what a chapter asks the class to look at, measured on its view.

plan() picks the chapter's view in the page's language; the builder reads the claims off the view's trace
(analysis/claims.py, or lab/claims.py for a number a lab panel shows) and writes each one's line in that language from
its measured values (ui.claim_<kind> in static/text/<lang>.json), so the page prints what was measured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from analysis.claims import ClaimError, View
from app import errors
from app.inference_pool import TraceRun
from app.lessons import Chapter, ui_words
from app.resolve import Resolved
from app.tokenizing import encode_text
from lab.claims import measure


def shown(value: Any) -> str:
    """A measured value as a line prints it: weights with two decimals, tiny errors in scientific notation."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if value == 0:
        return "0"
    if value != 0 and abs(value) < 0.005:
        return f"{value:.1e}"
    return f"{value:.2f}"


def line(kind: str, values: Mapping[str, Any], words: Mapping[str, str]) -> str:
    """ui.claim_<kind> with the measured values filled in ({weight}, {query}, ...; {pattern} by its name)."""
    filled = {key: shown(value) for key, value in values.items()}
    if "pattern" in values:
        filled["pattern"] = words.get(f"pat_{values['pattern']}", str(values["pattern"]))
    if kind != "row_top":  # a predicted token's leading space, shown as the page shows it (row_top names words)
        filled.update({k: str(values[k]).replace(" ", "␣") for k in ("token", "top", "clean_answer", "corrupted_answer")
                       if k in values})
    template = words.get(f"claim_{kind}_{values.get('pattern')}") or words.get(f"claim_{kind}", "")
    return template.format_map(filled)


def plan(resolved: Resolved, number: int, chapter: Chapter, lang: str) -> Callable[[TraceRun], dict[str, Any]]:
    view = chapter.in_lang(lang)
    cfg = resolved.cfg
    n_layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    if not (view.layer < n_layers and view.head < cfg.n_heads):
        raise errors.not_in_model(f"Chapter {chapter.id} opens layer {view.layer}, head {view.head}, which "
                                  f"{resolved.name} does not have.")
    words = ui_words(lang)
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
        claims = []
        for asked in view.claims:
            try:
                claim = measure(on_screen, asked)
            except ClaimError as error:
                raise errors.not_in_model(f"Chapter {chapter.id}: {error}.") from error
            claims.append({"kind": claim.kind, "holds": claim.holds, "values": claim.values,
                           "line": line(claim.kind, claim.values, words)})
        return {"chapter": chapter.id, "number": number + 1, "lang": lang, "model": resolved.name,
                "text": view.text, "target": view.target, "stage": chapter.stage, "layer": view.layer,
                "head": view.head, "claims": claims}

    return build
