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
}


def measure(view: View, claim: Mapping[str, Any]) -> Claim:
    """One claim of a chapter (`{"kind": ..., **its words}`) measured on its view by its kind."""
    params = dict(claim)
    kind = params.pop("kind", None)
    if kind not in KINDS:
        raise ClaimError(f"unknown claim kind {kind!r}")
    return KINDS[kind](view, **params)


def measured(view: View, claims: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A chapter's claims measured on its view, each with the line the page prints in the view's language:
    {kind, holds, values, line}. A claim that cannot be read on the view is a ClaimError."""
    words = ui_words(view.lang)
    out = []
    for asked in claims:
        claim = measure(view, asked)
        out.append({"kind": claim.kind, "holds": claim.holds, "values": claim.values,
                    "line": line(claim.kind, claim.values, words)})
    return out
