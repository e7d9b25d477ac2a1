"""A first POST /api/trace checks the text's length once and looks up the body cache once (tests/app/trace_hops.py)."""

from __future__ import annotations

from tests.app.trace_hops import FIRST_TRACE, measure


def test_a_first_trace_checks_the_length_once_and_looks_up_the_body_cache_once() -> None:
    hops = measure(FIRST_TRACE)
    assert hops.calls.count("app/tokenizing.py:check_chars") == 1, hops.calls
    assert hops.calls.count("app/inference_pool.py:cached_body") == 1, hops.calls
    assert hops.calls.count("app/tokenizing.py:encode") == 1, hops.calls
    assert hops.forward_calls > 0  # the profiler saw the pool thread's forward pass
