"""lab/parameters.py: the counts equal the state dict, and splitting into heads costs nothing extra."""

from __future__ import annotations

from lab import parameters
from model.config import TransformerConfig
from model.transformer import Transformer


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(architecture="decoder", vocab_size=16, d_model=32, n_layers=2, n_heads=4, n_ctx=16,
                                   pos_encoding="rope", seed=3, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


def test_parameters_equal_the_state_dict_and_heads_cost_nothing_extra() -> None:
    for model in (make(), make(architecture="encoder-decoder", pos_encoding="learned"), make(n_kv_heads=2)):
        report = parameters.parameter_report(model)
        assert report["counts"]["total"] == report["state_dict_total"]
        seen: set[int] = set()
        independent = sum(t.numel() for t in model.state_dict().values()
                          if t.data_ptr() not in seen and not seen.add(t.data_ptr()))  # type: ignore[func-returns-value]
        assert report["state_dict_total"] == independent
    cfg = TransformerConfig(d_model=512, n_heads=8)
    one, eight = parameters.attention_counts(cfg, 1), parameters.attention_counts(cfg, 8)
    assert one == eight and one["total"] == 4 * (512 * 512 + 512)
    assert len({row["total"] for row in parameters.head_splits(cfg)}) == 1
    kv = {row["kind"] + str(row["n_kv_heads"]): row["kv"] for row in parameters.kv_sharing(cfg)}
    assert kv["MHA8"] == 2 * (512 * 512 + 512) and kv["MQA1"] == 2 * (512 * 64 + 64)
    assert kv["GQA2"] == 2 * (512 * 128 + 128)


def test_the_head_sweep_splits_d_model_even_where_the_models_heads_are_wider() -> None:
    """Gemma's heads (tests/lab/new_family_models.py): 4 × 16 on d_model 32. The sweep's rows are heads of
    d_model / h, all the same cost; the model's own layer is counted at its real width, from its weights."""
    from tests.lab.new_family_models import NEW_FAMILIES, new_family_model

    for name in NEW_FAMILIES:
        model = new_family_model(name)
        splits = parameters.head_splits(model.cfg)
        assert [row["d_head"] * row["n_heads"] for row in splits] == [32] * len(splits)
        assert len({row["total"] for row in splits}) == 1 and splits[0]["W_Q"] == 32 * 32
        own = parameters.own_attention(model)
        assert own["d_head"] == model.cfg.d_head and own["W_Q"] == 32 * 4 * model.cfg.d_head
        kv = {row["n_kv_heads"]: row for row in parameters.kv_sharing(model.cfg)}
        assert kv[model.cfg.kv_heads]["total"] == own["total"]  # the model's own sharing, at its own width
