"""A fake positional-encoding family (training/pe_family.py's six members) for the tests.

Each member is a real checkpoint folder (config.json with meta, weights, tokenizer), written the way
`training.pe_family.ship` writes them: random weights, but the meta carries a `pe_family` table
whose numbers are chosen so each cell's formatting can be checked (3 decimals, tiny changes in
scientific notation, the learned member's empty 2x cell with its reason).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from checkpoints import save_checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.browser.models import CHARS

CONTEXT = 32  # the fake family's trained context (the real one trains on 64)
POSITIONS: dict[str, dict[str, Any]] = {
    "pe-none": {"pos_encoding": "none"},
    "pe-learned": {"pos_encoding": "learned", "n_ctx": CONTEXT},
    "pe-sinusoidal": {"pos_encoding": "sinusoidal"},
    "pe-rope": {"pos_encoding": "rope"},
    "pe-alibi": {"pos_encoding": "alibi"},
    "pe-rope-window": {"pos_encoding": "rope", "sliding_window": 8},
}


def _row(name: str, en: float, zh: float, double: tuple[float, float] | None, first: float, last: float,
         before: float, after: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "model": name,
        "pos_encoding": POSITIONS[name]["pos_encoding"],
        "sliding_window": POSITIONS[name].get("sliding_window"),
        "parameters": 12345,
        "trained_context": CONTEXT,
        "bits_per_character": {"en": en, "zh": zh},
        "bits_per_character_2x": {"en": double[0], "zh": double[1]} if double else None,
        "shuffle": {"last_token_change": last, "first_layer_change": first, "bits_per_token_original": before,
                    "bits_per_token_shuffled": after, "sentences": 24},
        "training": {"steps": 1200, "tokens_seen": 2457600, "train_seconds": 600.0, "threads": 1},
    }
    if double is None:
        why = f"a learned position table has {CONTEXT} rows: position {CONTEXT} has no vector"
        row["bits_per_character_2x_why"] = why
    return row


TABLE: dict[str, Any] = {
    "how": "fake: numbers chosen for the tests",
    "members": [
        _row("pe-none", 2.4567, 6.1234, (2.4501, 6.1111), 0.0, 0.0312, 5.1234, 5.2345),
        _row("pe-learned", 2.1234, 5.9876, None, 0.2468, 0.1357, 4.5678, 6.789),
        _row("pe-sinusoidal", 2.2222, 6.0001, (2.9876, 7.2), 0.1111, 0.0987, 4.6, 6.5),
        _row("pe-rope", 2.0987, 5.8761, (2.1, 5.9), 3.2e-05, 0.2222, 4.4, 6.9),
        _row("pe-alibi", 2.1111, 5.9, (2.1101, 5.8999), 0.3333, 0.1999, 4.45, 6.7),
        _row("pe-rope-window", 2.15, 5.95, (2.1555, 5.951), 0.0444, 0.00042, 4.5, 4.6),
    ],
}


def write_pe_family(weights: Path, names: tuple[str, ...] = tuple(POSITIONS)) -> dict[str, Path]:
    """Write the members `names` into weights/NAME (each meta with the whole table, as shipped)."""
    tok = CharTokenizer(CHARS, specials=("<|bos|>",))
    out = {}
    for i, name in enumerate(names):
        base: dict[str, Any] = {"architecture": "decoder", "vocab_size": tok.vocab_size, "d_model": 16, "n_layers": 2,
                                "n_heads": 2, "n_ctx": 2 * CONTEXT, "norm": "rmsnorm", "activation": "swiglu",
                                "bias": False, "seed": 20 + i, "init_std": 0.3}
        cfg = TransformerConfig(**{**base, **POSITIONS[name]})  # learned positions: only CONTEXT rows
        meta = {"name": name, "description": f"{name}: a fake positional-encoding family member (random weights)",
                "bos_token": "<|bos|>", "eos_token": "<|bos|>", "language": ["en", "zh"],
                "pe_family": copy.deepcopy(TABLE)}
        save_checkpoint(weights / name, Transformer(cfg).eval(), tok, meta)
        out[name] = weights / name
    return out
