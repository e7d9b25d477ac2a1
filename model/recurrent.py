"""A small recurrent language model (one GRU layer): the baseline the Transformer replaced.

It lives beside the Transformer because it is a model of the same kind (token ids in, next-token
logits out, pure PyTorch, no optimizer and no file format), and because both the code that trains
it (training/recurrent.py) and the lab that runs it step by step (lab/recurrence.py) must import it:
model/ is the one package both may.

    x_t = W_E[token_t]                                  [d_embed]   (the input embedding)
    r_t = σ(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)      reset gate
    z_t = σ(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)      update gate
    n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t-1} + b_hn))
    h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}               [d_hidden]  (h_0 = 0)
    logits_t = (h_t W_out) W_E^T                        [d_vocab]   (tied with the embedding)

h_t needs h_{t-1}: a sentence of N tokens is N steps, one after another. `forward` runs them in
PyTorch's fused nn.GRU (training); `steps` runs the same equations as a Python loop, one step per
token, on the same weights (the lab shows that loop; a test holds the two equal).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class RecurrentConfig:
    vocab_size: int
    d_embed: int = 64
    d_hidden: int = 256
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RecurrentLM(nn.Module):
    """Embedding -> one GRU layer -> a projection back to the embedding -> tied unembedding."""

    def __init__(self, cfg: RecurrentConfig) -> None:
        super().__init__()
        self.cfg = cfg
        generator = torch.Generator().manual_seed(cfg.seed)
        self.W_E = nn.Parameter(torch.randn(cfg.vocab_size, cfg.d_embed, generator=generator) * 0.02)
        self.gru = nn.GRU(cfg.d_embed, cfg.d_hidden, num_layers=1, batch_first=True)
        self.W_out = nn.Parameter(torch.randn(cfg.d_hidden, cfg.d_embed, generator=generator) / cfg.d_hidden**0.5)

    @property
    def device(self) -> torch.device:
        return self.W_E.device

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """[batch, pos] -> [batch, pos, d_embed]"""
        return self.W_E[tokens]

    def unembed(self, hidden: torch.Tensor) -> torch.Tensor:
        """[batch, pos, d_hidden] -> [batch, pos, d_vocab]"""
        return (hidden @ self.W_out) @ self.W_E.T

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """[batch, pos] -> logits [batch, pos, d_vocab], through the fused nn.GRU."""
        hidden, _ = self.gru(self.embed(tokens))  # [batch, pos, d_hidden]
        return self.unembed(hidden)

    def gates(self) -> tuple[torch.Tensor, ...]:
        """The GRU's weights split per gate (PyTorch stores them stacked as reset, update, new):
        (W_ir, W_iz, W_in) [d_hidden, d_embed], (W_hr, W_hz, W_hn) [d_hidden, d_hidden], and their biases."""
        w_ih, w_hh, b_ih, b_hh = self.gru.all_weights[0]  # layer 0's weight_ih, weight_hh, bias_ih, bias_hh
        return tuple(part for tensor in (w_ih, w_hh, b_ih, b_hh) for part in tensor.chunk(3))

    def step(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """One recurrent step: x [batch, d_embed], h_{t-1} [batch, d_hidden] -> h_t [batch, d_hidden]."""
        W_ir, W_iz, W_in, W_hr, W_hz, W_hn, b_ir, b_iz, b_in, b_hr, b_hz, b_hn = self.gates()
        r = torch.sigmoid(F.linear(x, W_ir, b_ir) + F.linear(h, W_hr, b_hr))
        z = torch.sigmoid(F.linear(x, W_iz, b_iz) + F.linear(h, W_hz, b_hz))
        n = torch.tanh(F.linear(x, W_in, b_in) + r * F.linear(h, W_hn, b_hn))
        return (1 - z) * n + z * h

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        """Input embeddings [batch, pos, d_embed] -> every hidden state [batch, pos, d_hidden], one step per
        position, each waiting for the one before."""
        h = x.new_zeros(x.shape[0], self.cfg.d_hidden)
        states = []
        for t in range(x.shape[1]):
            h = self.step(x[:, t], h)
            states.append(h)
        return torch.stack(states, dim=1)

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
