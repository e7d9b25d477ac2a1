"""The one table of claim kinds: every kind a chapter may name, and how a chapter's claims are measured.

A kind is a function `(view, **its words) -> Claim` (lessons/view.py). Those read off the trace on screen live in
lessons/trace_claims.py, those that call a lab experiment in lessons/lab_claims.py; KINDS below is the only list
of them. The chapters are checked against it when they load (lessons/chapters.py), and every kind has its line
in both languages (ui.claim_<kind> in static/text/<lang>.json; tests/app/test_lesson_claims.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lessons import lab_claims, trace_claims
from lessons.view import Claim, ClaimError, View
from lessons.wording import line, ui_words

KINDS: dict[str, Callable[..., Claim]] = {
    # read off the trace (lessons/trace_claims.py)
    "row_top": trace_claims.row_top,
    "row_top_heads": trace_claims.row_top_heads,
    "row_over_column": trace_claims.row_over_column,
    "rows_peak": trace_claims.rows_peak,
    "probe_best": trace_claims.probe_best,
    "top_next": trace_claims.top_next,
    "lens_settles": trace_claims.lens_settles,
    "masked_zero": trace_claims.masked_zero,
    "weighted_sum": trace_claims.weighted_sum,
    "heads_split": trace_claims.heads_split,
    "kv_heads": trace_claims.kv_heads,
    "unscaled_peakier": trace_claims.unscaled_peakier,
    "residual_add": trace_claims.residual_add,
    "rope_turns": trace_claims.rope_turns,
    "ffn_width": trace_claims.ffn_width,
    # read off a lab experiment's numbers (lessons/lab_claims.py)
    "softmax_gradient": lab_claims.softmax_gradient,
    "flash_traffic_saves": lab_claims.flash_traffic_saves,
    "attribution_head": lab_claims.attribution_head,
    "patching_head": lab_claims.patching_head,
    "patching_handover": lab_claims.patching_handover,
    "fact_missing": lab_claims.fact_missing,
    "deltanet_state": lab_claims.deltanet_state,
}


# Where a kind's numbers are drawn: None, on the explorer's chart of the chapter (its values are measured "on
# screen"); else the lab panel that prints them ("measured in the lab", linked). A lab kind is measured on the
# chapter's own sentence only: on another view the page keeps the chapter's line, marked as the lab's.
PANELS: dict[str, str | None] = {kind: None for kind in KINDS} | {
    "top_next": "logit_lens", "lens_settles": "logit_lens", "fact_missing": "logit_lens",
    "softmax_gradient": "scaling", "flash_traffic_saves": "flash", "attribution_head": "logit_attribution",
    "patching_head": "activation_patching", "patching_handover": "activation_patching",
    "deltanet_state": "linear_attention",
}

# kinds whose line states the claim rather than what was measured ("the probe measured this as the strongest
# head"): on another view where the claim fails, their line would be false, so it stays the lesson's
ASSERTED = {"probe_best"}


def measure(view: View, claim: Mapping[str, Any]) -> Claim:
    """One claim of a chapter (`{"kind": ..., **its words}`) measured on its view by its kind."""
    params = dict(claim)
    kind = params.pop("kind", None)
    if kind not in KINDS:
        raise ClaimError(f"unknown claim kind {kind!r}")
    return KINDS[kind](view, **params)


def measured(view: View, claims: Iterable[Mapping[str, Any]], own: bool = True) -> list[dict[str, Any]]:
    """A chapter's claims measured on a view, each with the line the page prints in the view's language and
    where its numbers are drawn: {kind, holds, values, line, panel, on_view}.

    On the chapter's own view (`own`) every claim is measured, and one that cannot be read is a ClaimError. On
    another view (the class's own sentence, layer or head) a kind drawn on the chart is measured again on it; a lab
    kind, or one whose words the view lacks ("it" in a sentence without it), is not: `on_view` False and no line,
    so the page shows the chapter's own line marked as belonging to the lesson's sentence."""
    words = ui_words(view.lang)
    out: list[dict[str, Any]] = []
    for asked in claims:
        kind, panel = asked.get("kind"), PANELS.get(str(asked.get("kind")))
        if not own and panel is not None:  # a lab kind is left to the lesson's view
            out.append({"kind": kind, "holds": False, "values": {}, "line": "", "panel": panel, "on_view": False})
            continue
        try:
            claim = measure(view, asked)
        except ClaimError:
            if own:
                raise
            out.append({"kind": kind, "holds": False, "values": {}, "line": "", "panel": panel, "on_view": False})
            continue
        if not own and claim.kind in ASSERTED and not claim.holds:  # its line asserts it: it stays the lesson's
            out.append({"kind": kind, "holds": False, "values": {}, "line": "", "panel": panel, "on_view": False})
            continue
        out.append({"kind": claim.kind, "holds": claim.holds, "values": claim.values,
                    "line": line(claim.kind, claim.values, words), "panel": panel, "on_view": True})
    return out
