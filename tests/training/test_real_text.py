"""tiny-gpt v2 and the positional-encoding family, re-measured from the shipped weights.

Every figure the meta (and docs/MODELS.md) states is measured again here, within 2%: the tokenizer's
whole characters and whole words, bits per character on the held-out split, head scores on
held-out sentences typed twice, and the positional-encoding family's table.
"""

from __future__ import annotations

import pytest
import torch

from analysis.heads import best_heads, bos_id_for, natural_head_scores
from checkpoints import load_checkpoint
from tests.conftest import CORPUS, WEIGHTS

PE_FAMILY = ("pe-none", "pe-learned", "pe-sinusoidal", "pe-rope", "pe-alibi", "pe-rope-window")


@pytest.fixture(scope="module")
def corpus():
    if not CORPUS.is_dir():
        pytest.skip(f"the training corpus is not at {CORPUS} (CI and developer machines have it there)")
    from training.corpus import load_corpus

    return load_corpus([CORPUS])


# ---------------------------------------------------------------- the tokenizer


def test_example_sentences_are_one_token_per_character(tiny_gpt):
    from training.vocabulary import EXAMPLE_SENTENCES

    for sentence in EXAMPLE_SENTENCES:
        if not any(ord(c) > 127 for c in sentence):
            continue
        tokens = tiny_gpt.tokenizer.encode(sentence)
        assert [t.text for t in tokens] == list(sentence), sentence
    assert len(tiny_gpt.tokenizer.encode("我爱北京天安门广场。")) == 10


def test_unseen_characters_fall_back_to_bytes_and_round_trip(tiny_gpt):
    text = "広場 𝔘 😀 é\u0301"
    tokens = tiny_gpt.tokenizer.encode(text)
    assert any(t.text.startswith("<0x") for t in tokens)
    assert tiny_gpt.tokenizer.decode([t.id for t in tokens]) == text


def test_tokenizer_figures_re_measured(tiny_gpt, corpus):
    from training.vocabulary import tokenizer_figures

    recorded = tiny_gpt.meta["tokenizer_figures"]
    measured = tokenizer_figures(tiny_gpt.tokenizer, corpus)
    assert measured["english_whole_word_rate"] >= 0.9
    assert measured["english_whole_word_rate"] == pytest.approx(recorded["english_whole_word_rate"], rel=0.02)
    assert measured["example_sentence_tokens"] == recorded["example_sentence_tokens"]
    for lang, value in recorded["held_out_chars_per_token"].items():
        assert measured["held_out_chars_per_token"][lang] == pytest.approx(value, rel=0.02)


def test_every_chinese_character_seen_three_times_is_one_token(tiny_gpt, corpus):
    from training.vocabulary import chinese_characters

    chars = chinese_characters(corpus, 3)
    assert len(chars) > 2000
    split = [c for c in chars if len(tiny_gpt.tokenizer.encode(c)) != 1]
    assert not split, split[:20]


# ---------------------------------------------------------------- tiny-gpt v2 on held-out text


def test_bits_per_character_re_measured(tiny_gpt, corpus):
    from training.corpus import BOS, bits_per_character

    meta = tiny_gpt.meta
    measured = bits_per_character(
        tiny_gpt.model, tiny_gpt.tokenizer, corpus, meta["training"]["context"], tiny_gpt.tokenizer.token_id(BOS)
    )
    for lang in ("en", "zh"):
        assert measured[lang] == pytest.approx(meta["bits_per_character"][lang], rel=0.02), lang
    assert measured["en"] < 2.0 and measured["zh"] < 8.0  # far below a uniform guess over the vocabulary


def test_where_the_chinese_bits_go(tiny_gpt, corpus):
    """docs/MODELS.md, "A classical yardstick": the held-out Chinese characters seen 3-300 times in training are
    about a third of the tokens and carry half of the bits; the rarer, the dearer."""
    from training.corpus import BOS, bits_by_training_frequency

    bands = {b["seen"]: b for b in bits_by_training_frequency(
        tiny_gpt.model, tiny_gpt.tokenizer, corpus, "zh", tiny_gpt.meta["training"]["context"],
        tiny_gpt.tokenizer.token_id(BOS))}
    assert bands["3-30"]["bits_per_token"] == pytest.approx(12.9, rel=0.02)
    assert bands["30-300"]["bits_per_token"] == pytest.approx(9.06, rel=0.02)
    assert bands["300-"]["bits_per_token"] < bands["30-300"]["bits_per_token"] < bands["3-30"]["bits_per_token"]
    rare = [bands["3-30"], bands["30-300"]]
    assert sum(b["share_of_tokens"] for b in rare) == pytest.approx(0.32, abs=0.01)
    assert sum(b["share_of_bits"] for b in rare) == pytest.approx(0.495, abs=0.01)
    assert sum(b["share_of_bits"] for b in bands.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_induction_on_held_out_sentences_typed_twice(tiny_gpt, lang):
    meta = tiny_gpt.meta
    sentences = meta["probe_sentences"][lang]
    assert len(sentences) >= 12
    ids = [[t.id for t in tiny_gpt.tokenizer.encode(s)] for s in sentences]
    best = best_heads(natural_head_scores(tiny_gpt.model, ids, bos_id=bos_id_for(tiny_gpt.tokenizer, meta)))
    recorded = meta["natural_best_heads"][lang]
    for pattern in ("induction", "previous-token"):
        assert best[pattern]["score"] == pytest.approx(recorded[pattern]["score"], rel=0.02, abs=0.005)
        assert (best[pattern]["layer"], best[pattern]["head"]) == (
            recorded[pattern]["layer"],
            recorded[pattern]["head"],
        )


def test_induction_fires_on_a_new_sentence_typed_twice(tiny_gpt):
    """Not a probe sentence: a teacher's own sentence, typed twice, in each language."""
    bos = bos_id_for(tiny_gpt.tokenizer, tiny_gpt.meta)
    recorded = tiny_gpt.meta["natural_best_heads"]
    for lang, sentence in (
        ("en", "The teacher wrote a long sentence on the board and the class read it aloud."),
        ("zh", "老师在黑板上写了一句很长的话，全班同学一起大声朗读。"),
    ):
        ids = [t.id for t in tiny_gpt.tokenizer.encode(sentence)]
        head = recorded[lang]["induction"]
        entry = next(
            e
            for e in natural_head_scores(tiny_gpt.model, [ids], bos_id=bos)
            if (e["layer"], e["head"]) == (head["layer"], head["head"])
        )
        chance = 1 / (len(ids) + 1)
        assert entry["scores"]["induction"] > 3 * chance, (lang, entry["scores"])


def test_history_holds_the_loss_curve_and_natural_scores(tiny_gpt):
    history = tiny_gpt.meta["history"]
    assert len(history) >= 5
    assert history[-1]["val_loss"] < history[0]["val_loss"]
    assert {"en", "zh"} <= set(history[-1]["natural"])


# ---------------------------------------------------------------- the positional-encoding family


def _family():
    missing = [name for name in PE_FAMILY if not (WEIGHTS / name / "config.json").is_file()]
    if missing:
        pytest.skip(f"not shipped: {', '.join(missing)}")
    return {name: load_checkpoint(WEIGHTS / name) for name in PE_FAMILY}


def test_family_differs_only_in_positions():
    family = _family()
    configs = {name: loaded.model.cfg.to_dict() for name, loaded in family.items()}
    ignored = {"pos_encoding", "sliding_window", "n_ctx", "seed"}
    reference = {k: v for k, v in configs["pe-rope"].items() if k not in ignored}
    for name, cfg in configs.items():
        assert {k: v for k, v in cfg.items() if k not in ignored} == reference, name
    steps = {loaded.meta["training"]["steps"] for loaded in family.values()}
    assert len(steps) == 1


def test_family_table_re_measured(corpus):
    from training.pe_family import member_row

    family = _family()
    for name, loaded in family.items():
        recorded = next(r for r in loaded.meta["pe_family"]["members"] if r["model"] == name)
        measured = member_row(name, loaded, corpus)
        for lang in ("en", "zh"):
            assert measured["bits_per_character"][lang] == pytest.approx(recorded["bits_per_character"][lang], rel=0.02)
        if recorded["bits_per_character_2x"] is None:
            assert measured["bits_per_character_2x"] is None and name == "pe-learned"
        else:
            for lang in ("en", "zh"):
                assert measured["bits_per_character_2x"][lang] == pytest.approx(
                    recorded["bits_per_character_2x"][lang], rel=0.02
                )
        shuffle, shuffle_recorded = measured["shuffle"], recorded["shuffle"]
        assert shuffle["last_token_change"] == pytest.approx(shuffle_recorded["last_token_change"], rel=0.02, abs=1e-4)
        if name == "pe-none":
            assert shuffle["first_layer_change"] < 1e-5  # a set has no order
        else:
            assert shuffle["first_layer_change"] > 1e-3


def test_no_position_first_layer_is_blind_to_order():
    """The exact fact behind the table: without positions, layer 0 at the last position reads a set."""
    family = _family()
    model = family["pe-none"].model.eval()
    ids = torch.tensor([[0, 11, 22, 33, 44, 55, 66]])
    shuffled = torch.tensor([[0, 44, 22, 66, 11, 33, 55]])  # BOS stays first, the last token differs
    shuffled[0, -1] = ids[0, -1]
    shuffled[0, 1:-1] = ids[0, 1:-1][torch.tensor([3, 1, 0, 4, 2])]
    _, a = model.run_with_trace(ids, names=["blocks.0.hook_resid_mid"])
    _, b = model.run_with_trace(shuffled, names=["blocks.0.hook_resid_mid"])
    assert torch.allclose(a["blocks.0.hook_resid_mid"][0, -1], b["blocks.0.hook_resid_mid"][0, -1], atol=1e-5)
