"""Name what each attention head does: score every head on a few well-known patterns.

The probe is the classic one from the induction-head literature: a first token (BOS when the
model has one) followed by a block of random tokens repeated once, `[bos] r r`. On it:

- previous-token: mean attention from position i to i - 1;
- first-token (sink): mean attention to position 0;
- self (diagonal): mean attention to its own position;
- duplicate-token: in the second repeat, attention to the earlier copy of the same token;
- induction: in the second repeat, attention to the token right after the earlier copy
  (the head that lets the model continue a sequence it has seen before).

A second probe uses real text (`natural_head_scores`): each sentence typed twice, `[bos] s s`,
scored the same way. A model can pass the random-id probe and fail this one (tiny-gpt v1 did:
0.96 on random ids, 0.04 on an English sentence typed twice), so labels say which probe they
come from (`probe`: "random" or "natural").

A third probe (`coreference_scores`, decoders only) reads sentences with a pronoun and two nouns it could
refer to ("The animal didn't cross the street because it was too tired"): the weight of the pronoun's row
on its antecedent minus on the other noun, as a lesson reads the row of "it".

Each score lies in [0, 1] (coreference in [-1, 1]). `python -m training.heads MODEL_DIR` prints a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from model.device import one_row
from model.hooks import stacks, stage_name
from model.transformer import Transformer

PATTERNS = ("previous-token", "first-token", "self", "duplicate-token", "induction")
# a head is labelled with the pattern it fits best, when that score passes this threshold
THRESHOLDS = {"previous-token": 0.4, "induction": 0.3, "duplicate-token": 0.3, "first-token": 0.6, "self": 0.5}


def repeated_random_tokens(
    n_seqs: int, seq_len: int, low: int, high: int, bos_id: int | None, seed: int = 0
) -> torch.Tensor:
    """[n_seqs, (1) + 2 * seq_len]: random ids in [low, high) repeated once, after an optional BOS."""
    generator = torch.Generator().manual_seed(seed)
    random = torch.randint(low, high, (n_seqs, seq_len), generator=generator)
    parts = [random, random]
    if bos_id is not None:
        parts.insert(0, torch.full((n_seqs, 1), bos_id, dtype=torch.long))
    return torch.cat(parts, dim=1)


def _pattern_scores(pattern: torch.Tensor, seq_len: int, offset: int) -> dict[str, torch.Tensor]:
    """pattern [batch, head, q_pos, k_pos] on `[bos]*offset r r` -> {pattern name: [head] scores}."""
    n_pos = pattern.shape[-1]
    q = torch.arange(1, n_pos)
    prev = pattern[:, :, q, q - 1].mean(dim=(0, 2))
    first = pattern[:, :, q, 0].mean(dim=(0, 2))
    diag = pattern[:, :, q, q].mean(dim=(0, 2))
    second = torch.arange(offset + seq_len, offset + 2 * seq_len)  # positions of the second repeat
    dup = pattern[:, :, second, second - seq_len].mean(dim=(0, 2))
    induction = pattern[:, :, second, second - seq_len + 1].mean(dim=(0, 2))
    return {"previous-token": prev, "first-token": first, "self": diag, "duplicate-token": dup, "induction": induction}


def label_for(scores: dict[str, float]) -> str:
    """The pattern a head fits best, or "mixed" when none passes its threshold."""
    best, best_margin = "mixed", 0.0
    for name, threshold in THRESHOLDS.items():
        margin = scores.get(name, 0.0) / threshold
        if margin >= 1.0 and margin > best_margin:
            best, best_margin = name, margin
    return best


def _entries(model: Transformer, trace_scores: dict[str, dict[str, torch.Tensor]], probe: str) -> list[dict[str, Any]]:
    """{hook name: {pattern: [head]}} -> one entry per head, labelled."""
    results: list[dict[str, Any]] = []
    for name, scores in trace_scores.items():
        parts = name.split(".")
        stack = parts[0] if parts[0] in ("encoder", "decoder") else ""
        layer = int(parts[parts.index("blocks") + 1])
        for head in range(model.cfg.n_heads):
            head_dict = {k: round(float(v[head]), 4) for k, v in scores.items()}
            entry: dict[str, Any] = {
                "layer": layer,
                "head": head,
                "scores": head_dict,
                "label": label_for(head_dict),
                "probe": probe,
            }
            if stack:
                entry["stack"] = stack
            results.append(entry)
    return results


def _self_patterns(model: Transformer) -> list[str]:
    """Every self-attention layer's pattern, in every stack (cross-attention reads another text); a hybrid's
    DeltaNet layers have no pattern (no token-to-token weights: a state), so they are not scored."""
    return [stage_name("pattern", layer, stack=stack) for stack in stacks(model.cfg)
            for layer in range(len(model.stack_named(stack).blocks)) if not model.cfg.is_deltanet(layer)]


def _layer_of(name: str) -> int:
    """The block a stage name is in (blocks.3.attn.hook_pattern -> 3): a hybrid's attention layers are not 0, 1, ..."""
    parts = name.split(".")
    return int(parts[parts.index("blocks") + 1])


@torch.no_grad()
def natural_head_scores(
    model: Transformer, sentences: list[list[int]], *, bos_id: int | None = None
) -> list[dict[str, Any]]:
    """Score every self-attention head on real sentences typed twice: `[bos] s s` for each s.

    sentences: token ids of each sentence (without BOS). Sentences longer than half the context
    are cut. The scores are means over sentences, as in head_scores.
    """
    cfg = model.cfg
    offset = 0 if bos_id is None else 1
    sums: dict[str, dict[str, torch.Tensor]] = {}
    used = 0
    was_training = model.training
    model.eval()
    for ids in sentences:
        ids = ids[: (cfg.n_ctx - offset) // 2]
        if len(ids) < 2:
            continue
        tokens = torch.tensor([([bos_id] if bos_id is not None else []) + ids + ids], device=model.device)
        kwargs: dict[str, Any] = {"target_tokens": tokens} if cfg.architecture == "encoder-decoder" else {}
        _, trace = model.run_with_trace(tokens, names=_self_patterns(model), **kwargs)
        for name in trace:
            scores = _pattern_scores(trace[name].float().cpu(), len(ids), offset)
            total = sums.setdefault(name, {k: torch.zeros_like(v) for k, v in scores.items()})
            for key, value in scores.items():
                total[key] += value
        used += 1
    model.train(was_training)
    if not used:
        raise ValueError("natural_head_scores needs at least one sentence of two or more tokens")
    return _entries(model, {n: {k: v / used for k, v in s.items()} for n, s in sums.items()}, "natural")


@torch.no_grad()
def head_scores(
    model: Transformer,
    *,
    bos_id: int | None = None,
    token_range: tuple[int, int] | None = None,
    seq_len: int = 40,
    n_seqs: int = 16,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Score every self-attention head: [{"layer", "head", "stack", "scores": {...}, "label"}].

    token_range: ids [low, high) for the random tokens (default: every id except bos_id).
    For encoder-decoder models the same sequence is fed to both stacks; the encoder and the
    decoder's self-attention heads are scored (cross-attention is not, it reads another text).
    """
    cfg = model.cfg
    if token_range is None:
        low = 1 if bos_id == 0 else 0
        high = cfg.vocab_size if bos_id is None or bos_id == 0 else bos_id
        token_range = (low, high)
    offset = 0 if bos_id is None else 1
    seq_len = min(seq_len, (cfg.n_ctx - offset) // 2)
    tokens = repeated_random_tokens(n_seqs, seq_len, token_range[0], token_range[1], bos_id, seed).to(model.device)
    kwargs: dict[str, Any] = {}
    if cfg.architecture == "encoder-decoder":
        kwargs["target_tokens"] = tokens
    was_training = model.training
    model.eval()
    _, trace = model.run_with_trace(tokens, names=_self_patterns(model), **kwargs)
    model.train(was_training)
    return _entries(
        model, {name: _pattern_scores(trace[name].float().cpu(), seq_len, offset) for name in trace}, "random"
    )


def best_heads(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """For each pattern, the head with the highest score: {pattern: {"layer", "head", "score"}}."""
    best: dict[str, dict[str, Any]] = {}
    for entry in results:
        for name, score in entry["scores"].items():
            if name not in best or score > best[name]["score"]:
                best[name] = {"layer": entry["layer"], "head": entry["head"], "score": score}
                if "stack" in entry:
                    best[name]["stack"] = entry["stack"]
    return best


def bos_id_for(tokenizer: Any, meta: dict[str, Any]) -> int | None:
    """The BOS id a checkpoint was trained with (meta `bos_token`), if any."""
    name = meta.get("bos_token")
    if name and hasattr(tokenizer, "token_id"):
        try:
            return tokenizer.token_id(name)
        except KeyError:
            return None
    return None


# ---------------------------------------------------------------- coreference

COREFERENCE = "coreference"
# a head is labelled "coreference" when, over the probe's sentences, its pronoun rows put this much more
# weight on the antecedent than on the other noun (see coreference_scores). Measured on SmolLM2: layer 13,
# head 8 scores 0.24 (0.47 on the antecedent alone), the next head 0.18; with the words before the pronoun
# shuffled, the same head falls to 0.11, 0.02 and -0.10 (tests/checkpoints/test_smollm2_heads.py).
COREFERENCE_THRESHOLD = 0.2


@dataclass(frozen=True)
class Coreference:
    """One probe sentence: a pronoun, the noun it refers to and another noun it could have referred to.

    text: "The animal didn't cross the street because it was too tired"; pronoun "it", antecedent "animal",
    other "street". Words are found in the text as a lesson claim finds them (analysis.words.covering).
    """

    text: str
    pronoun: str
    antecedent: str
    other: str


# Winograd-style pairs (two nouns, one pronoun): the antecedent is the first noun in some and the second in
# others, so a head that merely reads the first (or the nearest) noun scores about zero.
COREFERENCE_EN = [
    Coreference("The animal didn't cross the street because it was too tired", "it", "animal", "street"),
    Coreference("The trophy didn't fit in the suitcase because it was too big", "it", "trophy", "suitcase"),
    Coreference("The man couldn't lift his son because he was so weak", "he", "man", "son"),
    Coreference("Mary thanked John because he had helped her with the move", "he", "John", "Mary"),
    Coreference("John thanked Mary because she had helped him with the move", "she", "Mary", "John"),
    Coreference("The dog chased the cat up the tree until it was too tired to bark", "it", "dog", "cat"),
    Coreference("The girl gave the boy an apple because he was hungry", "he", "boy", "girl"),
    Coreference("The boy gave the girl an apple because she was hungry", "she", "girl", "boy"),
]
COREFERENCE_ZH = [
    Coreference("这只猫没有过马路，因为它太累了", "它", "猫", "马路"),
    Coreference("小明把书给了小红，因为她要复习", "她", "小红", "小明"),
]


@dataclass(frozen=True)
class CoreferenceRows:
    """A probe sentence as token positions: the pronoun's row (its last token, which has read the whole word),
    and the antecedent's and the other noun's tokens (a word split into several tokens counts as all of them)."""

    ids: list[int]
    pronoun: int
    antecedent: list[int]
    other: list[int]


def coreference_rows(tokenizer: Any, case: Coreference, bos_id: int | None = None) -> CoreferenceRows:
    """Tokenize a probe sentence and find its words (ValueError when one is not in the text)."""
    from analysis.words import covering  # where a word is, as the lessons find it

    tokens = tokenizer.encode(case.text)
    shift = 0 if bos_id is None else 1
    row = covering(tokens, case.text, case.pronoun)[-1] + shift
    antecedent = [i + shift for i in covering(tokens, case.text, case.antecedent)]
    other = [i + shift for i in covering(tokens, case.text, case.other)]
    if max(antecedent + other) >= row:
        raise ValueError(f"{case.text!r}: both nouns must come before {case.pronoun!r}")
    return CoreferenceRows(([bos_id] if bos_id is not None else []) + [t.id for t in tokens], row, antecedent, other)


@torch.no_grad()
def coreference_weights(model: Transformer, rows: list[CoreferenceRows]) -> tuple[torch.Tensor, torch.Tensor]:
    """[sentence, layer, head] weight of the pronoun's row on the antecedent, and on the other noun (each the
    sum over the word's tokens). Decoders only: a causal row is where the model has read up to the pronoun."""
    if model.cfg.architecture != "decoder":
        raise ValueError("the coreference probe reads a decoder's causal rows; this model is not a decoder")
    names = _self_patterns(model)
    on_antecedent, on_other = [], []
    was_training = model.training
    model.eval()
    for case in rows:
        tokens = one_row(case.ids, model.device)
        _, trace = model.run_with_trace(tokens, names=names)
        pronoun_rows = torch.stack([trace[n][0, :, case.pronoun].float().cpu() for n in names])  # [layer, head, k_pos]
        on_antecedent.append(pronoun_rows[:, :, case.antecedent].sum(-1))
        on_other.append(pronoun_rows[:, :, case.other].sum(-1))
    model.train(was_training)
    return torch.stack(on_antecedent), torch.stack(on_other)


def coreference_scores(model: Transformer, rows: list[CoreferenceRows]) -> list[dict[str, Any]]:
    """Score every head: "coreference" = mean over sentences of (weight on the antecedent − weight on the other
    noun), in [-1, 1]; "antecedent" = the mean weight on the antecedent alone. Entries as head_scores gives them,
    labelled "coreference" when the first passes COREFERENCE_THRESHOLD, else "mixed"."""
    if not rows:
        raise ValueError("coreference_scores needs at least one sentence")
    antecedent, other = coreference_weights(model, rows)  # [sentence, layer, head]
    contrast, alone = (antecedent - other).mean(0), antecedent.mean(0)  # [layer, head]
    results = []
    for row, layer in enumerate(_layer_of(n) for n in _self_patterns(model)):
        for head in range(contrast.shape[1]):
            score = round(float(contrast[row, head]), 4)
            results.append({"layer": layer, "head": head, "probe": COREFERENCE,
                            "scores": {COREFERENCE: score, "antecedent": round(float(alone[row, head]), 4)},
                            "label": COREFERENCE if score >= COREFERENCE_THRESHOLD else "mixed"})
    return results


@torch.no_grad()
def coreference_row_peaks(
    model: Transformer, tokenizer: Any, case: Coreference, bos_id: int | None = None
) -> dict[tuple[int, int], tuple[bool, float]]:
    """{(layer, head): (does the pronoun's row peak on the antecedent, its weight on the antecedent)}, counting
    the byte tokens of one character together (SmolLM2 spells 猫 in three), as a lesson's row_top claim does."""
    from analysis.words import characters

    rows = coreference_rows(tokenizer, case, bos_id)
    shift = 0 if bos_id is None else 1
    groups = ([[0]] if bos_id is not None else []) + [[i + shift for i in g]
                                                      for g in characters(tokenizer.encode(case.text))]
    was_training = model.training
    model.eval()
    _, trace = model.run_with_trace(one_row(rows.ids, model.device), names=_self_patterns(model))
    model.train(was_training)
    peaks: dict[tuple[int, int], tuple[bool, float]] = {}
    for name in _self_patterns(model):
        layer = _layer_of(name)
        row = trace[name][0, :, rows.pronoun].float().cpu()  # [head, k_pos]
        per_character = torch.stack([row[:, g].sum(-1) for g in groups], dim=-1)  # [head, character]
        for head, top in enumerate(per_character.argmax(-1).tolist()):
            peaks[(layer, head)] = (set(groups[top]) <= set(rows.antecedent),
                                    round(float(row[head, rows.antecedent].sum()), 4))
    return peaks
