"""Process tuning (app.process_tuning): a fresh server's traces land in pre-touched heap, not fresh pages.

While the trace cache fills, each new trace stays alive beside the cached ones; without a
pre-touched heap every one of them faults in fresh pages (~700 for a 32-token tiny-gpt trace keeping
every stage). The probe keeps every stage (compact=False, as a trace with edits or a KV cache does):
a compact trace keeps only what flows between blocks, too little to tell the heap apart.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# in a fresh interpreter, so the heap is as a new server's: N traces kept alive, page faults counted
PROBE = textwrap.dedent(
    """
    import resource, sys, torch
    from app import process_tuning
    from model import Transformer, TransformerConfig
    torch.set_num_threads(1)
    model = Transformer(TransformerConfig(d_model=192, n_layers=4, n_heads=6, vocab_size=7000, n_ctx=64)).eval()
    ids = torch.randint(0, 7000, (1, 33))
    model.run_with_trace(ids, compact=False)  # first-call costs out of the way
    process_tuning.keep_freed_memory(keep_mb=int(sys.argv[1]))
    process_tuning.prefault_heap(int(sys.argv[1]))
    kept = []
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        kept.append(model.run_with_trace(ids, compact=False))  # every stage kept, as a trace with edits is
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def faults_for_ten_kept_traces(prefault_mb: int) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, str(prefault_mb)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator and Linux page-fault counts")
def test_prefaulted_heap_takes_new_traces_without_page_faults() -> None:
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt > 0  # the counter works here
    without = faults_for_ten_kept_traces(0)
    with_heap = faults_for_ten_kept_traces(64)
    assert without > 2000  # ten traces of ~3.5 MB each, kept alive, in fresh pages
    assert with_heap < without / 10, (with_heap, without)
