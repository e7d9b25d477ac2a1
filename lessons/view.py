"""What a claim (and, later, a question) reads: one chapter's view, and the words on it.

A `View` is the traced forward pass on screen and where on it the class looks (layer, head, stack); the claim
kinds (lessons/trace_claims.py, lessons/lab_claims.py) read their numbers off it and return a `Claim`: the kind,
whether it holds, and the values measured, by name. Those values are facts (numbers, token texts); the line the
page prints is worded from static/text/<lang>.json by lessons/wording.py.

Words in a claim ("it", "animal", "猫") are found in the text as analysis/words.py finds them and mean every token
that covers them: a query is the row of the last such token (the one that has read the whole word), a key the sum
of the weights on all of them (SmolLM2 splits 猫 into three byte tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from analysis import words
from model.hooks import stage_name
from model.tokenizer import Token
from model.transformer import Transformer

Values = dict[str, Any]


@dataclass(frozen=True)
class View:
    """One chapter's view: the traced forward pass and where on it the class looks."""

    model: Transformer
    trace: Mapping[str, torch.Tensor]
    tokens: Sequence[Token]  # what the stack on screen reads (the decoder's input for an encoder-decoder)
    text: str  # the text those tokens cover
    layer: int
    head: int
    stack: str | None = None  # the stack on screen: None (a single stack), "encoder" or "decoder"
    source_tokens: Sequence[Token] = ()  # an encoder-decoder's source, the keys of cross-attention
    source_text: str = ""
    piece: Callable[[int], str] = str  # a token id's text, as the explorer shows it
    meta: Mapping[str, Any] = field(default_factory=dict)  # the model's measured head scores
    lang: str = "en"
    encode: Callable[[str], Sequence[Token]] | None = None  # another text's tokens as the model reads them

    def at(self, stage: str) -> str:
        """The trace name of a stage of the layer on screen (model.hooks.stage_name)."""
        return stage_name(stage, self.layer, stack=self.stack)


@dataclass(frozen=True)
class Claim:
    kind: str
    holds: bool
    values: Values


class ClaimError(ValueError):
    """A claim that cannot be read on its view (a word not in the sentence, a stage the model lacks)."""


AnswerType = str  # "token" (a position), "block" (a block, or "never"), "choice" (an option), "number"
Answer = int | float | str


@dataclass(frozen=True)
class Question:
    """A question's right answer on one view, measured (lessons/question_kinds.py): what kind of answer it takes,
    the options the page offers (token positions as drawn, blocks, choices; none for a number), the answer and
    the answers that count as it (a character's byte tokens together), the tolerance of a number, the value the
    reveal shows, and the facts its prompt and its one-line why are worded with."""

    kind: str
    answer_type: AnswerType
    answer: Answer
    measured: Answer
    values: Values
    options: tuple[dict[str, Any], ...] = ()
    accepted: tuple[Answer, ...] = ()  # the answers that count as right (token, block, choice); () for a number
    tolerance: float = 0.0  # a number's: right within answer ± tolerance


class QuestionError(ClaimError):
    """A question with no well-defined answer on its view (a near tie, a word or a token it lacks)."""


def covering(tokens: Sequence[Token], text: str, word: str, occurrence: int = 1) -> list[int]:
    """Positions of the tokens that cover the `occurrence`-th `word` of `text` (analysis.words.covering), or a
    ClaimError naming the word."""
    try:
        return words.covering(tokens, text, word, occurrence)
    except words.NotInText as error:
        raise ClaimError(str(error)) from error


def shown(view: View, positions: Sequence[int], tokens: Sequence[Token] | None = None) -> str:
    """The words the tokens at `positions` spell (their text as the sentence has it)."""
    tokens = view.tokens if tokens is None else tokens
    text = view.source_text if tokens is view.source_tokens else view.text
    first, last = tokens[positions[0]], tokens[positions[-1]]
    return text[first.start:last.end].strip() if last.end > first.start else tokens[positions[0]].text


def shown_token(view: View, position: int) -> str:
    """The word a token position stands for on screen: its text in the sentence, or the token's own text."""
    return shown(view, [position]) or view.tokens[position].text
