"""Pre-LN against Post-LN: two models that differ only in where the norm sits, at init and in training.

    Post-LN (the original paper, BERT):  x = LN(x + F(x))
    Pre-LN  (GPT-2, Llama):              x = x + F(LN(x))

Xiong et al. (2020, "On Layer Normalization in the Transformer Architecture") show that at
initialisation the gradient of Post-LN's weights is largest near the output and shrinks toward
the input, so a learning rate that suits the top layers is too large for them and training
needs a warm-up; Pre-LN's gradients do not grow toward the output and it trains without one.
(With this code's initialisation Pre-LN's are not quite flat either: they are somewhat larger
near the input, since each layer's gradient also flows back through the blocks above it.)
Here: per-layer gradient norms at init on one batch of corpus-like text (bytes as tokens, so no
tokenizer is needed), then the loss of both over the first optimizer steps with the same
learning rate and no warm-up. Initialisation follows the paper's Xavier-like scale
(init_std = 1/sqrt(d_model)) unless told otherwise. The steps are the project's one train loop
(optimization/loop.py), with plain Adam at a constant rate and no gradient clipping.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F

from model.config import TransformerConfig
from model.layers import MLP, Block
from model.transformer import Transformer
from optimization.loop import train_loop

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "en"
CORPUS_BYTES = 200_000  # read at most this much of the corpus
SKIP_BYTES = 5_000  # past each file's Project Gutenberg header

SAMPLE_TEXT = (
    "It was a bright cold morning in the small town by the river, and the bells of the old church were "
    "ringing for the first service. The baker had opened his shop before dawn, and the smell of fresh "
    "bread drifted along the street where the children walked to school. Mrs. Weston, who had lived in "
    "the house at the corner for forty years, stood at her window and watched them pass. She remembered "
    "the winter when the river froze and the whole town went skating by lantern light, and she smiled. "
    '"You will catch cold," said her sister, coming into the room with a tray of tea. "Nonsense," '
    'replied Mrs. Weston, "I have never caught cold in my life, and I do not intend to begin now." '
    "They sat together by the fire and spoke of letters, of neighbours, of the price of coal and the "
    "new curate, who was said to be very clever and rather shy. In the afternoon the wind rose, the "
    "clouds came in from the sea, and by evening the first snow had begun to fall on the roofs. "
)


@dataclass(frozen=True)
class NormPlacementSettings:
    n_layers: int = 12
    d_model: int = 64
    n_heads: int = 4
    seq_len: int = 64
    batch: int = 16
    steps: int = 200
    lr: float = 1e-3
    init_std: float | None = None  # None: 1/sqrt(d_model), the Xavier-like scale of the paper
    activation: str = "relu"
    seed: int = 0

    def check(self) -> None:
        limits = {
            "n_layers": (1, 24),
            "d_model": (8, 256),
            "n_heads": (1, 16),
            "seq_len": (8, 256),
            "batch": (1, 64),
            "steps": (0, 500),
        }
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name} must be in {low}..{high}, got {value}")
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        if not 0 < self.lr <= 0.1:
            raise ValueError("lr must be in (0, 0.1]")
        if self.batch * self.seq_len * self.steps * self.n_layers * self.d_model > 4e9:
            raise ValueError("too much work for one call: fewer steps, layers, or a smaller batch")

    def model_config(self, placement: str) -> TransformerConfig:
        return TransformerConfig(
            vocab_size=256,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            n_ctx=self.seq_len,
            pos_encoding="learned",
            norm_placement=placement,  # type: ignore[arg-type]
            activation=self.activation,  # type: ignore[arg-type]
            init_std=self.d_model**-0.5 if self.init_std is None else self.init_std,
            seed=self.seed,
        )


@dataclass
class PlacementRun:
    placement: str
    ffn_out_grad_norms: list[float]  # ‖∂L/∂W_out‖ of each block's FFN (the paper's W^{FFN,2}), input to output
    block_grad_norms: list[float]  # ‖∂L/∂θ‖ over all of each block's weights
    growth: float  # mean FFN gradient norm of the top third of blocks / the bottom third: > 1 grows toward the output
    losses: list[float] = field(default_factory=list)  # training loss at steps 1..steps


def corpus_text(directory: Path | None = None) -> bytes:
    """The first bytes of the shared English corpus (default: CORPUS, read at call time), or the built-in sample
    when it is absent."""
    directory = CORPUS if directory is None else directory
    if directory.is_dir():
        files = sorted(directory.glob("*.txt"))
        if files:
            return b"".join(f.read_bytes()[SKIP_BYTES : SKIP_BYTES + CORPUS_BYTES // len(files)] for f in files)
    return SAMPLE_TEXT.encode() * 4


def batch_of(data: torch.Tensor, settings: NormPlacementSettings, generator: torch.Generator) -> torch.Tensor:
    """Random windows of seq_len + 1 bytes: [batch, seq_len + 1]."""
    starts = torch.randint(0, len(data) - settings.seq_len - 1, (settings.batch,), generator=generator)
    return torch.stack([data[s : s + settings.seq_len + 1] for s in starts.tolist()])


def lm_loss(model: Transformer, rows: torch.Tensor) -> torch.Tensor:
    logits = model(rows[:, :-1])  # [batch, pos, d_vocab]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1))


@dataclass
class ByteWindows:
    """The train loop's task (optimization.loop.Task): random byte windows, next-byte loss."""

    data: torch.Tensor  # [bytes]
    settings: NormPlacementSettings
    generator: torch.Generator  # the same draws for both placements
    fused_attention: bool = True

    def next_batch(self) -> torch.Tensor:
        return batch_of(self.data, self.settings, self.generator)  # [batch, seq_len + 1]

    def loss(self, model: Transformer, batch: torch.Tensor) -> torch.Tensor:
        return lm_loss(model, batch)


def layer_gradient_norms(model: Transformer, rows: torch.Tensor) -> tuple[list[float], list[float]]:
    """Backpropagate one batch at init: each block's FFN W_out gradient norm and its whole gradient norm."""
    model.zero_grad(set_to_none=True)
    lm_loss(model, rows).backward()
    ffn, block_norms = [], []
    blocks: list[Block] = list(model.stack.blocks)  # type: ignore[arg-type]
    for block in blocks:
        grad = cast(MLP, block.mlp).W_out.weight.grad  # the models it trains have one FFN a block, no experts
        ffn.append(float(grad.norm()) if grad is not None else 0.0)
        squares = [p.grad.pow(2).sum() for p in block.parameters() if p.grad is not None]
        block_norms.append(float(torch.stack(squares).sum().sqrt()))
    model.zero_grad(set_to_none=True)
    return ffn, block_norms


def growth_toward_output(norms: list[float]) -> float:
    """Mean of the top third of layers over the mean of the bottom third (one layer each when fewer than 3)."""
    third = max(1, len(norms) // 3)
    bottom, top = sum(norms[:third]) / third, sum(norms[-third:]) / third
    return top / bottom if bottom > 0 else float("inf")


def run_placement(placement: str, settings: NormPlacementSettings, data: torch.Tensor) -> PlacementRun:
    model = Transformer(settings.model_config(placement))
    generator = torch.Generator().manual_seed(settings.seed)
    ffn, block_norms = layer_gradient_norms(model, batch_of(data, settings, generator))
    run = PlacementRun(placement, ffn, block_norms, growth_toward_output(ffn))
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr)
    train_loop(model, optimizer, ByteWindows(data, settings, generator), state={"step": 0}, total_steps=settings.steps,
               lr_at=lambda step: settings.lr,  # constant, no warm-up: the point
               after_step=lambda step, loss: run.losses.append(loss), clip_norm=None)
    return run


def compare_norm_placement(settings: NormPlacementSettings, text: bytes | None = None) -> dict[str, object]:
    """Both placements from the same seed on the same batches: gradient norms at init and the loss curves."""
    settings.check()
    data = torch.tensor(list(corpus_text() if text is None else text), dtype=torch.long)
    if len(data) <= settings.seq_len + 1:
        raise ValueError("the text is shorter than one training window")
    torch.manual_seed(settings.seed)
    runs = {placement: run_placement(placement, settings, data) for placement in ("pre", "post")}
    return {"settings": asdict(settings), "runs": {name: asdict(run) for name, run in runs.items()}}
