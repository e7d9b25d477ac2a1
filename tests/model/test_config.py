"""Bad configurations fail at construction with a message a person can act on."""

from __future__ import annotations

import pytest

from model import Transformer, TransformerConfig
from model.config import ConfigError


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(d_model=30, n_heads=4), "divisible by n_heads"),
        (dict(n_heads=6, n_kv_heads=4, d_model=48), "divisible by n_kv_heads"),
        (dict(pos_encoding="spiral"), "unknown positional encoding"),
        (dict(norm="batchnorm"), "unknown norm"),
        (dict(activation="tanh"), "unknown activation"),
        (dict(architecture="rnn"), "unknown architecture"),
        (dict(sliding_window=0), "sliding_window"),
        (dict(n_layers=0), "n_layers"),
        (dict(pos_encoding="rope", d_model=12, n_heads=4), "'rope' .* even d_head"),
        (dict(pos_encoding="sinusoidal", d_model=7, n_heads=1), "'sinusoidal' .* even d_model, got 7"),
    ],
)
def test_bad_configs_fail_clearly(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TransformerConfig(**changes)  # type: ignore[arg-type]


def test_config_round_trips_through_json() -> None:
    cfg = TransformerConfig(architecture="encoder-decoder", pos_encoding="alibi", n_kv_heads=2)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown config fields"):
        TransformerConfig.from_dict({**cfg.to_dict(), "colour": "blue"})


def test_gqa_with_all_kv_heads_is_exactly_mha() -> None:
    import torch

    mha = Transformer(TransformerConfig(pos_encoding="rope", n_heads=4, n_kv_heads=None, seed=3))
    gqa = Transformer(TransformerConfig(pos_encoding="rope", n_heads=4, n_kv_heads=4, seed=3))
    toks = torch.randint(0, 256, (1, 11))
    with torch.inference_mode():
        assert torch.equal(mha(toks), gqa(toks))


def test_parameter_counts_add_up() -> None:
    model = Transformer(TransformerConfig(pos_encoding="learned", tied_embeddings=False))
    counts = model.parameter_counts()
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    assert counts["positional"] == 512 * 64 and counts["unembedding"] == 256 * 64


@pytest.mark.parametrize(("changes", "named"), [
    ({"rope_freq_factors": (1.0, 2.0)}, "one factor per rotated pair: d_head / 2 = 8, got 2"),
    ({"rope_freq_factors": (1.0,) * 7 + (0.0,)}, "finite and above 0"),
    ({"rope_freq_factors": (1.0,) * 7 + (float("nan"),)}, "finite and above 0"),
    ({"rope_freq_factors": ["x"] * 8}, "a list of numbers"),
    ({"rope_freq_factors": (2.0,) * 8, "pos_encoding": "alibi"}, "scale a rotary encoding, not 'alibi'"),
])
def test_rope_frequency_factors_are_checked(changes: dict[str, object], named: str) -> None:
    base: dict[str, object] = {"d_model": 64, "n_heads": 4, "pos_encoding": "rope"}
    with pytest.raises(ConfigError, match=named):
        TransformerConfig(**{**base, **changes})  # type: ignore[arg-type]
