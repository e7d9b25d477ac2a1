"""What every answer is made of: tokens, tensors, and the one error shape."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class VocabToken(BaseModel):
    """A token of the vocabulary: its id and its text."""

    # the one {id, text} model: the answers that give a token numbers extend it (a prediction its probability and
    # logit, a lab row its own); app.tokenizing.vocab_token writes one

    id: int
    text: str


class TokenOut(VocabToken):
    start: int = Field(description="Character span [start, end) of the input (`chat`: of chat_text); an added start "
                                   "token has start == end.")
    end: int


class TensorOut(BaseModel):
    name: str
    dims: list[str]
    shape: list[int]
    dtype: str
    data: Any = Field(description="Nested lists (null = masked) or {dtype, bdata, shape} when encoding is base64.")
    nonfinite: int | None = Field(None, description=(
        "Present only when some cells are NaN or ±Inf that no mask put there (an overflow in this stage or before "
        "it): how many. They travel as null (NaN in base64), like masked cells."))


class ErrorBody(BaseModel):
    code: str
    message: str
    details: dict[str, Any] | None = Field(None, description=(
        "Present on some refusals: {reason, and the values it names} (e.g. not_one_token: field, text, count, "
        "pieces; missing_space: field, text, suggestion; too_many_chars: field, length, limit; too_large: field, "
        "limit), for a page to word the refusal in its own language. `field` is the request's field name."))


class ErrorOut(BaseModel):
    error: ErrorBody


ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "Unknown model"},
    413: {"model": ErrorOut, "description": "Body over 64 KB"},
    422: {"model": ErrorOut, "description": "Empty or too long text, out-of-range layer/head, invalid request"},
    503: {"model": ErrorOut, "description": "Busy: retry after the Retry-After header's seconds"},
}
