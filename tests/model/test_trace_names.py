"""The exact ordered list of trace names is part of the API contract: pin it."""

from __future__ import annotations

from model import Transformer, TransformerConfig

BLOCK_PRE_LN_ROPE_SWIGLU = [
    "hook_resid_pre",
    "ln1.hook_scale",
    "ln1.hook_normalized",
    "attn.hook_q",
    "attn.hook_k",
    "attn.hook_v",
    "attn.hook_rot_q",
    "attn.hook_rot_k",
    "attn.hook_scores_raw",
    "attn.hook_scores_scaled",
    "attn.hook_attn_scores",
    "attn.hook_pattern",
    "attn.hook_z",
    "hook_attn_out",
    "hook_resid_mid",
    "ln2.hook_scale",
    "ln2.hook_normalized",
    "mlp.hook_pre",
    "mlp.hook_gate",
    "mlp.hook_up",
    "mlp.hook_post",
    "hook_mlp_out",
    "hook_resid_post",
]


def test_decoder_trace_names_are_pinned() -> None:
    cfg = TransformerConfig(
        n_layers=2, pos_encoding="rope", norm="rmsnorm", activation="swiglu", n_heads=4, n_kv_heads=2
    )
    expected = ["hook_tokens", "hook_embed"]
    for layer in range(2):
        expected += [f"blocks.{layer}.{n}" for n in BLOCK_PRE_LN_ROPE_SWIGLU]
    expected += ["ln_final.hook_scale", "ln_final.hook_normalized", "hook_logits"]
    assert Transformer(cfg).trace_names == expected


def test_encoder_decoder_post_ln_names_are_pinned() -> None:
    cfg = TransformerConfig(
        architecture="encoder-decoder",
        n_layers=1,
        pos_encoding="sinusoidal",
        norm_placement="post",
        activation="relu",
        final_norm=False,
    )
    ln = ["hook_mean", "hook_scale", "hook_normalized"]
    attn = [
        "hook_q",
        "hook_k",
        "hook_v",
        "hook_scores_raw",
        "hook_scores_scaled",
        "hook_attn_scores",
        "hook_pattern",
        "hook_z",
    ]
    mlp = ["mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post_unnormed"]
    encoder = (
        ["encoder.hook_tokens", "encoder.hook_embed", "encoder.hook_pos_embed", "encoder.blocks.0.hook_resid_pre"]
        + [f"encoder.blocks.0.attn.{n}" for n in attn]
        + ["encoder.blocks.0.hook_attn_out", "encoder.blocks.0.hook_resid_mid_unnormed"]
        + [f"encoder.blocks.0.ln1.{n}" for n in ln]
        + ["encoder.blocks.0.hook_resid_mid"]
        + [f"encoder.blocks.0.{n}" for n in mlp]
        + [f"encoder.blocks.0.ln2.{n}" for n in ln]
        + ["encoder.blocks.0.hook_resid_post"]
    )
    decoder = (
        ["decoder.hook_tokens", "decoder.hook_embed", "decoder.hook_pos_embed", "decoder.blocks.0.hook_resid_pre"]
        + [f"decoder.blocks.0.attn.{n}" for n in attn]
        + ["decoder.blocks.0.hook_attn_out", "decoder.blocks.0.hook_resid_mid_unnormed"]
        + [f"decoder.blocks.0.ln1.{n}" for n in ln]
        + ["decoder.blocks.0.hook_resid_mid"]
        + [f"decoder.blocks.0.cross_attn.{n}" for n in attn]
        + ["decoder.blocks.0.hook_cross_attn_out", "decoder.blocks.0.hook_resid_cross_unnormed"]
        + [f"decoder.blocks.0.ln_cross.{n}" for n in ln]
        + ["decoder.blocks.0.hook_resid_cross"]
        + [f"decoder.blocks.0.{n}" for n in mlp]
        + [f"decoder.blocks.0.ln2.{n}" for n in ln]
        + ["decoder.blocks.0.hook_resid_post", "hook_logits"]
    )
    assert Transformer(cfg).trace_names == encoder + decoder
