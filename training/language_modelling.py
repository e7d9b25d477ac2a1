"""Language modelling on the corpus, with curricula that teach in-context copying.

Training rows are BOS + a window of text, Chinese with probability zh_prob (it is only ~10%
of the characters). Some rows carry a curriculum:

- repeat: random tokens repeated (the classic induction probe; it teaches a circuit that keys on
  random ids and not on text, so tiny-gpt v2 trains without it);
- span: text where a span of the first half is copied later in the row;
- echo: a natural span of text, then the same span again (once to three times) and the text that
  followed it, which is what a sentence typed twice looks like.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from model.transformer import Transformer
from training.regularization import residual_dropout


class Batcher:
    """Training rows: BOS + text, Chinese with probability zh_prob; some rows carry copying curricula."""

    def __init__(
        self,
        streams: dict[str, np.ndarray],
        n_ctx: int,
        batch: int,
        bos_id: int,
        vocab: int,
        zh_prob: float,
        repeat_frac: float,
        span_frac: float,
        seed: int,
        echo_frac: float = 0.0,
        echo_max_copies: int = 4,
    ) -> None:
        self.streams, self.n_ctx, self.batch, self.bos_id, self.vocab = streams, n_ctx, batch, bos_id, vocab
        self.zh_prob, self.repeat_frac, self.span_frac = zh_prob, repeat_frac, span_frac
        self.echo_frac, self.echo_max_copies = echo_frac, echo_max_copies
        self.rng = np.random.default_rng(seed)

    def text_row(self) -> np.ndarray:
        lang = "zh" if (self.rng.random() < self.zh_prob and len(self.streams.get("zh", ())) > self.n_ctx) else "en"
        ids = self.streams[lang]
        start = int(self.rng.integers(0, len(ids) - self.n_ctx))
        return np.concatenate([[self.bos_id], ids[start : start + self.n_ctx - 1]])

    def echo_row(self) -> np.ndarray:
        """BOS + s + s (+ s ...) + what followed s: a natural span of 4..n/2 tokens read 2..echo_max_copies times.

        Reading it twice is what a sentence typed twice looks like; the extra copies give more
        positions where copying pays, which makes the induction circuit form sooner."""
        row = self.text_row()
        length = int(self.rng.integers(4, self.n_ctx // 2))
        copies = int(self.rng.integers(2, self.echo_max_copies + 1))
        span = row[1 : 1 + length]
        return np.concatenate([row[:1], *([span] * (copies - 1)), row[1:]])[: self.n_ctx]

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs [batch, n_ctx - 1], targets [batch, n_ctx - 1]); target -100 is ignored."""
        rows, targets = [], []
        n = self.n_ctx
        for _ in range(self.batch):
            kind = self.rng.random()
            if kind < self.repeat_frac:
                # BOS + r r r ...: random tokens repeated; the first copy is unpredictable, so unscored
                length = int(self.rng.integers(8, n // 2))
                r = self.rng.integers(1, self.vocab, length)
                row = np.concatenate([[self.bos_id], np.tile(r, n // length + 1)])[:n]
                target = row[1:].copy()
                target[: length - 1] = -100  # predicting inside the first copy is pure guessing
            elif kind < self.repeat_frac + self.echo_frac:
                row = self.echo_row()
                target = row[1:].copy()
            else:
                row = self.text_row()
                if kind < self.repeat_frac + self.echo_frac + self.span_frac:
                    # copy a span of the first half into the second half
                    half = n // 2
                    length = int(self.rng.integers(8, half // 2 + 1))
                    src = int(self.rng.integers(1, half - length + 1))
                    dst = int(self.rng.integers(half, n - length + 1))
                    row = row.copy()
                    row[dst : dst + length] = row[src : src + length]
                target = row[1:].copy()
            rows.append(row[:-1])
            targets.append(target)
        return torch.tensor(np.stack(rows), dtype=torch.long), torch.tensor(np.stack(targets), dtype=torch.long)


class LanguageModelTask:
    """Next-token prediction on Batcher rows (target -100 is not scored)."""

    fused_attention = True

    def __init__(self, batcher: Batcher, dropout: float = 0.0) -> None:
        self.batcher, self.dropout = batcher, dropout

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.batcher.next()

    def loss(self, model: Transformer, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, targets = (t.to(model.device) for t in batch)  # [batch, pos] each
        with residual_dropout(model, self.dropout):
            logits = model(inputs)  # [batch, pos, d_vocab]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
