"""The shipped tiny-deltanet (model/weights/tiny-deltanet, trained by `train --config tiny-deltanet`) is Qwen3.5 in
transformers' sense: its weights, written as a qwen3_5_text state dict (the inverse of checkpoints/families/qwen35.py:
norms as w = gain − 1, q_proj's rows per head [query | gate], the convolution [channels, 1, kernel]), loaded into
transformers' Qwen3_5ForCausalLM, give our trace's log-probabilities within 1e-4 on a real sentence; the same
directory saved and read back by our Hugging Face loader gives the shipped config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import load_checkpoint
from lab.deltanet_head import WEIGHTS, shipped_hybrid, text_tokens
from model.config import TransformerConfig
from tests.checkpoints.gguf_files import transformers
from tests.checkpoints.test_families import compare

TOL = 1e-4
SENTENCES = ("The animal didn't cross the street because it was too tired", "这只猫没有过马路，因为它太累了")


def hf_config(cfg: TransformerConfig) -> dict[str, Any]:
    """transformers' Qwen3_5TextConfig fields for our config."""
    return dict(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, intermediate_size=cfg.d_mlp,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.kv_heads,
        head_dim=cfg.d_head, linear_key_head_dim=cfg.deltanet_key_dim, linear_value_head_dim=cfg.deltanet_value_dim,
        linear_num_key_heads=cfg.deltanet_key_heads, linear_num_value_heads=cfg.deltanet_value_heads,
        linear_conv_kernel_dim=cfg.deltanet_conv, max_position_embeddings=cfg.n_ctx, rms_norm_eps=cfg.norm_eps,
        tie_word_embeddings=cfg.tied_embeddings, attn_implementation="eager",
        layer_types=["linear_attention" if cfg.is_deltanet(i) else "full_attention" for i in range(cfg.n_layers)],
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_base,
                         "partial_rotary_factor": cfg.rotary_dims / cfg.d_head})


def hf_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Our weights as Qwen3_5ForCausalLM's state dict."""
    cfg: TransformerConfig = model.cfg  # type: ignore[assignment]
    ours = {k: v.float() for k, v in model.state_dict().items()}
    out = {"model.embed_tokens.weight": ours["stack.embed.W_E.weight"],
           "model.norm.weight": ours["stack.ln_final.w"] - 1.0}
    for layer in range(cfg.n_layers):
        o, hf = f"stack.blocks.{layer}.", f"model.layers.{layer}."
        if cfg.is_deltanet(layer):
            dn = hf + "linear_attn."
            for name, hf_name in (("W_qkv", "in_proj_qkv"), ("W_z", "in_proj_z"), ("W_a", "in_proj_a"),
                                  ("W_b", "in_proj_b"), ("W_O", "out_proj")):
                out[f"{dn}{hf_name}.weight"] = ours[f"{o}deltanet.{name}.weight"]
            out[dn + "conv1d.weight"] = ours[o + "deltanet.conv_w"][:, None, :]
            out[dn + "A_log"] = ours[o + "deltanet.A_log"]
            out[dn + "dt_bias"] = ours[o + "deltanet.dt_bias"]
            out[dn + "norm.weight"] = ours[o + "deltanet.norm_w"]
        else:
            at = hf + "self_attn."
            query = ours[o + "attn.W_Q.weight"].view(cfg.n_heads, cfg.d_head, -1)
            gate = ours[o + "attn.W_G.weight"].view(cfg.n_heads, cfg.d_head, -1)
            out[at + "q_proj.weight"] = torch.cat((query, gate), dim=1).reshape(2 * cfg.n_heads * cfg.d_head, -1)
            for name, hf_name in (("W_K", "k_proj"), ("W_V", "v_proj"), ("W_O", "o_proj")):
                out[f"{at}{hf_name}.weight"] = ours[f"{o}attn.{name}.weight"]
            out[at + "q_norm.weight"] = ours[o + "attn.q_norm_w"] - 1.0
            out[at + "k_norm.weight"] = ours[o + "attn.k_norm_w"] - 1.0
        for name, hf_name in (("W_gate", "gate_proj"), ("W_in", "up_proj"), ("W_out", "down_proj")):
            out[f"{hf}mlp.{hf_name}.weight"] = ours[f"{o}mlp.{name}.weight"]
        out[hf + "input_layernorm.weight"] = ours[o + "ln1.w"] - 1.0
        out[hf + "post_attention_layernorm.weight"] = ours[o + "ln2.w"] - 1.0
    out["lm_head.weight"] = out["model.embed_tokens.weight"]
    return out


@pytest.fixture(scope="module")
def reference() -> torch.nn.Module:
    model = shipped_hybrid().model
    hf = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**hf_config(model.cfg)))
    missing, unexpected = hf.load_state_dict(hf_state(model), strict=False)
    assert not unexpected and not [m for m in missing if m != "lm_head.weight"], (missing, unexpected)
    return hf.eval()


def test_the_shipped_hybrid_is_qwen35_shaped() -> None:
    cfg = shipped_hybrid().model.cfg
    assert cfg.deltanet_layers == (0, 1, 2) and not cfg.is_deltanet(3) and cfg.attn_output_gate and cfg.qk_norm
    assert (cfg.deltanet_key_heads, cfg.deltanet_value_heads, cfg.deltanet_conv) == (2, 4, 4)
    assert (WEIGHTS / "tiny-deltanet" / "model.safetensors").stat().st_size <= 5 * 2 ** 20  # ships small


@pytest.mark.parametrize("text", SENTENCES)
def test_its_trace_matches_transformers_qwen35(reference: torch.nn.Module, text: str) -> None:
    loaded = shipped_hybrid()
    toks = torch.tensor([[t.id for t in text_tokens(loaded, text)]])
    assert compare(loaded.model, reference, toks) <= TOL
    # the state the explorer draws is the one transformers' recurrent cache holds after the text
    _, trace = loaded.model.run_with_trace(toks, names=["blocks.2.deltanet.hook_state"])
    with torch.inference_mode():
        cache = reference(toks, use_cache=True).past_key_values
    state = cache.layers[2].recurrent_states[0]  # transformers' LinearAttentionLayer: {0: S} of the one sequence
    # transformers keeps S as [batch, head, d_key, d_value]: ours is its transpose, as the equation writes it
    assert torch.allclose(trace["blocks.2.deltanet.hook_state"], state.transpose(-1, -2).float(), atol=1e-4)


def test_a_changed_weight_breaks_the_match(reference: torch.nn.Module) -> None:
    """The comparison can fail: one DeltaNet gain changed on transformers' side moves the log-probs."""
    loaded = shipped_hybrid()
    toks = torch.tensor([[t.id for t in text_tokens(loaded, SENTENCES[0])]])
    other = transformers.Qwen3_5ForCausalLM(reference.config)
    other.load_state_dict(reference.state_dict())
    with torch.no_grad():
        other.model.layers[1].linear_attn.A_log.add_(1.0)
    with torch.inference_mode():
        diff = (loaded.model(toks).log_softmax(-1) - other.eval()(toks).logits.log_softmax(-1)).abs().max().item()
    assert diff > 10 * TOL


def test_saved_as_hugging_face_it_loads_back_as_shipped(reference: torch.nn.Module, tmp_path: Path) -> None:
    reference.save_pretrained(tmp_path, safe_serialization=True)
    (tmp_path / "tokenizer.json").write_bytes((WEIGHTS / "tiny-deltanet" / "tokenizer.json").read_bytes())
    cfg = load_checkpoint(tmp_path).model.cfg
    shipped = shipped_hybrid().model.cfg
    assert (cfg.deltanet_layers, cfg.d_model, cfg.rotary_dims, cfg.deltanet_value_dim) == \
        (shipped.deltanet_layers, shipped.d_model, shipped.rotary_dims, shipped.deltanet_value_dim)
