"""The one list of the explorer's endpoints, beside app/lab's EXPERIMENTS: each an `Endpoint` record (app/pipeline.py)
at the end of its app/answers module, which drives its route (app/routers/explorer.py) and its OpenAPI entry.
`Service.run` answers every one of them, every lab experiment and the lesson claims the same way.
"""

from __future__ import annotations

from typing import Any

from app.answers import activations, attention, lesson_claims, lesson_questions, models, positional, predict, trace
from app.lab import EXPERIMENTS
from app.pipeline import Endpoint

# in the API docs' order
EXPLORER: tuple[Endpoint[Any], ...] = (
    models.LIST_MODELS,
    models.GET_MODEL,
    models.MODEL_STAGES,
    trace.TOKENIZE,
    trace.TRACE,
    attention.ATTENTION,
    attention.QKV,
    activations.ACTIVATIONS,
    positional.POSITIONAL_ENCODING,
    positional.POSITIONAL_KINDS,
    predict.PREDICT,
)

# its request is made from a chapter (app/answers/lesson_claims.py: view_request), so its route is written out
LESSON_CLAIMS = lesson_claims.LESSON_CLAIMS
LESSON_QUESTIONS = lesson_questions.LESSON_QUESTIONS  # the same request, plus a question and an answer

# every record: one name each (a name is its route's and its answers' first cache-key part)
ENDPOINTS: tuple[Endpoint[Any], ...] = (*EXPLORER, LESSON_CLAIMS, LESSON_QUESTIONS, *EXPERIMENTS)

__all__ = ["ENDPOINTS", "EXPLORER", "LESSON_CLAIMS", "LESSON_QUESTIONS"]
