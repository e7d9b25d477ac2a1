"""`python -m training.heads MODEL_DIR`: the random-token probe always, real sentences typed twice per
language when the checkpoint's meta lists `probe_sentences`, each row naming its probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.heads import PATTERNS, head_scores, natural_head_scores
from checkpoints import save_checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from training.heads import main

SENTENCES = {"en": ["the cat sat on the mat.", "a dog ran."], "zh": ["我爱北京天安门广场。"]}


def checkpoint(directory: Path, meta: dict[str, object]) -> tuple[Transformer, CharTokenizer]:
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz .我爱北京天安门广场。", specials=("<|bos|>",))
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_layers=2, n_heads=2, n_ctx=64, seed=3)
    model = Transformer(cfg)
    save_checkpoint(directory, model.eval(), tok, {"bos_token": "<|bos|>", **meta})
    return model, tok


def rows(out: str) -> dict[tuple[str, int, int], list[float]]:
    """(probe, layer, head) -> the five scores, from the printed table."""
    table: dict[tuple[str, int, int], list[float]] = {}
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["probe", "stack", "L", "H"]
    for line in lines[1:]:
        if not line.strip():
            break
        parts = line.split()
        table[(parts[0], int(parts[1]), int(parts[2]))] = [float(x) for x in parts[3 : 3 + len(PATTERNS)]]
    return table


def test_prints_both_probes_with_a_probe_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, tok = checkpoint(tmp_path / "m", {"probe_sentences": SENTENCES})
    assert main([str(tmp_path / "m")]) == 0
    table = rows(capsys.readouterr().out)
    assert {probe for probe, _, _ in table} == {"random", "natural-en", "natural-zh"}
    bos = tok.token_id("<|bos|>")
    # the table prints 3 decimals of scores kept to 4: within 0.0005 (and a float's width)
    for lang, sentences in SENTENCES.items():
        expected = natural_head_scores(model, [[t.id for t in tok.encode(s)] for s in sentences], bos_id=bos)
        for entry in expected:
            got = table[(f"natural-{lang}", entry["layer"], entry["head"])]
            assert got == pytest.approx([entry["scores"][p] for p in PATTERNS], abs=6e-4)
    for entry in head_scores(model, bos_id=bos):
        assert table[("random", entry["layer"], entry["head"])] == pytest.approx(
            [entry["scores"][p] for p in PATTERNS], abs=6e-4
        )


def test_json_keeps_its_keys_and_adds_the_natural_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint(tmp_path / "m", {"probe_sentences": SENTENCES})
    assert main([str(tmp_path / "m"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {e["probe"] for e in out["heads"]} == {"random"}
    assert set(out["natural_heads"]) == {"en", "zh"} and set(out["natural_best"]) == {"en", "zh"}
    assert {e["probe"] for entries in out["natural_heads"].values() for e in entries} == {"natural"}


def test_without_probe_sentences_only_the_random_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint(tmp_path / "m", {})
    assert main([str(tmp_path / "m")]) == 0
    table = rows(capsys.readouterr().out)
    assert {probe for probe, _, _ in table} == {"random"} and len(table) == 4
    assert main([str(tmp_path / "m"), "--json"]) == 0
    assert "natural_heads" not in json.loads(capsys.readouterr().out)


def test_write_meta_ships_the_labels_measured_on_another_checkpoints_sentences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A package model's labels: its own meta lists no sentences; another checkpoint's held-out ones are used,
    only in the languages the model reads (meta `language`), and the file says how it was made."""
    checkpoint(tmp_path / "source", {"probe_sentences": SENTENCES})
    model, tok = checkpoint(tmp_path / "m", {"language": ["en"]})
    out_file = tmp_path / "meta" / "m_heads.json"
    assert main([str(tmp_path / "m"), "--sentences-from", str(tmp_path / "source"), "--write-meta", str(out_file)]) == 0
    document = json.loads(out_file.read_text(encoding="utf-8"))
    assert document["probe_sentences"] == {"en": SENTENCES["en"]}
    assert set(document["natural_head_scores"]) == {"en"}
    expected = natural_head_scores(model, [[t.id for t in tok.encode(s)] for s in SENTENCES["en"]],
                                   bos_id=tok.token_id("<|bos|>"))
    assert document["natural_head_scores"]["en"] == expected
    assert len(document["head_scores"]) == 4 and document["best_heads"]["induction"]["score"] >= 0
    assert document["natural_best_heads"]["en"]["induction"]["score"] == max(
        e["scores"]["induction"] for e in expected)
    assert "--sentences-from" in document["head_scores_how"]
    assert "wrote" in capsys.readouterr().out


def test_a_model_that_reads_no_start_token_is_probed_without_one(tmp_path: Path) -> None:
    checkpoint(tmp_path / "source", {"probe_sentences": SENTENCES})
    model, tok = checkpoint(tmp_path / "m", {"prepend_bos": False})
    out_file = tmp_path / "m_heads.json"
    assert main([str(tmp_path / "m"), "--sentences-from", str(tmp_path / "source"), "--write-meta", str(out_file)]) == 0
    document = json.loads(out_file.read_text(encoding="utf-8"))
    expected = natural_head_scores(model, [[t.id for t in tok.encode(s)] for s in SENTENCES["zh"]], bos_id=None)
    assert document["natural_head_scores"]["zh"] == expected
