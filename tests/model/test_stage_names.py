"""model.hooks' stage names: every trace name is one stage_name makes, and attention_layer's one check."""

from __future__ import annotations

import pytest

from model import Transformer, TransformerConfig
from model.hooks import (
    ATTENTION_STAGES,
    BLOCK_STAGES,
    EMBED_STAGES,
    MLP_STAGES,
    NORM_STAGES,
    AttentionLayer,
    NotInModel,
    attention_layer,
    stacks,
    stage_name,
)

CONFIGS = {
    "decoder-rope-swiglu": TransformerConfig(n_layers=2, pos_encoding="rope", norm="rmsnorm", activation="swiglu",
                                             n_heads=4, n_kv_heads=2),
    "encoder-post-ln": TransformerConfig(architecture="encoder", n_layers=2, norm_placement="post",
                                         pos_encoding="learned", n_heads=2),
    "encoder-decoder": TransformerConfig(architecture="encoder-decoder", n_layers=2, n_decoder_layers=1,
                                         norm_placement="post", n_heads=2),
}
NORMS = ("ln1", "ln2", "ln_cross", "ln_embed", "ln_final")


def every_name(model: Transformer) -> set[str]:
    """Every name stage_name makes for this model's stacks and layers (more than the model has: rot_q, ...)."""
    names = {stage_name("logits")}
    for stack in stacks(model.cfg):
        names |= {stage_name(s, stack=stack) for s in EMBED_STAGES}
        names |= {stage_name(f"{norm}.{s}", stack=stack) for norm in NORMS for s in NORM_STAGES}
        for layer in range(len(model.stack_named(stack).blocks)):
            names |= {stage_name(s, layer, stack=stack) for s in MLP_STAGES + BLOCK_STAGES + ATTENTION_STAGES}
            names |= {stage_name(s, layer, stack=stack, cross=True) for s in ATTENTION_STAGES}
            names |= {stage_name(f"{norm}.{s}", layer, stack=stack) for norm in NORMS for s in NORM_STAGES}
    return names


@pytest.mark.parametrize("name", CONFIGS)
def test_every_trace_name_is_a_stage_name(name: str) -> None:
    model = Transformer(CONFIGS[name])
    missing = set(model.trace_names) - every_name(model)
    assert not missing, f"stages model.hooks cannot name: {sorted(missing)}"


def test_names_as_transformer_lens_spells_them() -> None:
    assert stage_name("pattern", 1) == "blocks.1.attn.hook_pattern"
    assert stage_name("pattern", 0, stack="decoder", cross=True) == "decoder.blocks.0.cross_attn.hook_pattern"
    assert stage_name("resid_post", "*") == "blocks.*.hook_resid_post"
    assert stage_name("pre", 2) == "blocks.2.mlp.hook_pre"
    assert stage_name("ln1.normalized", 0) == "blocks.0.ln1.hook_normalized"
    assert stage_name("ln_final.scale", stack="encoder") == "encoder.ln_final.hook_scale"
    assert stage_name("embed", stack="encoder") == "encoder.hook_embed"
    assert stage_name("logits") == "hook_logits"


@pytest.mark.parametrize(("stage", "layer", "cross"), [
    ("patern", 0, False),  # a typo
    ("pattern", None, False),  # a block's stage without its layer
    ("embed", 0, False),  # a stack's stage with a layer
    ("resid_post", 0, True),  # cross-attention of a stage outside the attention
    ("ln1.pattern", 0, False),  # a norm has no pattern
])
def test_a_name_that_cannot_exist_is_refused(stage: str, layer: int | None, cross: bool) -> None:
    with pytest.raises(ValueError):
        stage_name(stage, layer, cross=cross)


def test_attention_layer_names_the_module_it_checked() -> None:
    model = Transformer(CONFIGS["encoder-decoder"])
    for where in (AttentionLayer("encoder", 1), AttentionLayer("decoder", 0), AttentionLayer("decoder", 0, True)):
        assert attention_layer(model.cfg, where.layer, where.stack, where.cross) == where
        assert model.attention(where).hook_pattern.name == where.stage("pattern") in model.trace_names
    decoder = Transformer(CONFIGS["decoder-rope-swiglu"])
    assert attention_layer(decoder.cfg, 1, "decoder") == AttentionLayer(None, 1)  # a single stack may be named
    assert decoder.attention(AttentionLayer(None, 1)).hook_z.name == "blocks.1.attn.hook_z"


@pytest.mark.parametrize(("config", "layer", "stack", "cross", "says"), [
    ("encoder-decoder", 0, None, False, "name its stack"),
    ("encoder-decoder", 0, "encoder", True, "Cross-attention lives in the decoder"),
    ("decoder-rope-swiglu", 0, None, True, "no cross-attention"),
    ("decoder-rope-swiglu", 0, "encoder", False, "single decoder stack"),
    ("encoder-post-ln", 0, "decoder", False, "single encoder stack"),
])
def test_a_stack_the_model_lacks_is_refused(config: str, layer: int, stack: str | None, cross: bool,
                                            says: str) -> None:
    with pytest.raises(NotInModel, match=says) as refused:
        attention_layer(CONFIGS[config], layer, stack, cross)
    assert refused.value.layers is None


@pytest.mark.parametrize(("stack", "layer", "layers"), [("encoder", 2, 2), ("decoder", 1, 1), ("decoder", -1, 1)])
def test_a_layer_past_the_stack_is_refused_with_its_count(stack: str, layer: int, layers: int) -> None:
    with pytest.raises(NotInModel, match=f"numbered 0 to {layers - 1}") as refused:
        attention_layer(CONFIGS["encoder-decoder"], layer, stack)
    assert refused.value.layers == layers
