"""Is the embedding still there? At every stream of one stack (its input, then every block's output)
and every position, the cosine with the token's own embedding W_E[t] (before positions are added)
and with the stack's last stream.

POST /api/lab/embedding-persistence: how much of each token's own embedding every layer's stream keeps."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from app.lab.common import Experiment, StackTokensOut, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import stack_of
from app.schemas import StackName, TextInput, TokenOut
from app.tokenizing import tokens_out
from lab.embedding_persistence import embedding_persistence


class EmbeddingPersistenceLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。"},
    ]})

    stack: StackName | None = Field(None, description="Encoder-decoder only: 'encoder' (default) or 'decoder'.")


class EmbeddingPersistenceLabOut(StackTokensOut):
    tokens: list[TokenOut] = Field(description="The stack's tokens (an encoder-decoder's decoder: its input).")
    streams: list[str] = Field(description="'input' (block 0's resid_pre), then '0', '1', ...: block L's resid_post.")
    added: list[str] = Field(description="What the stack adds to the token embedding before block 0: "
                                         "'positions', 'segments', 'norm' (none: its input is the embedding).")
    to_embedding: list[list[float]] = Field(description="[stream][position] cos(stream, the token's embedding).")
    to_final: list[list[float]] = Field(description="[stream][position] cos(stream, the last block's resid_post).")
    mean_to_embedding: list[float] = Field(description="[stream] the mean over positions.")
    mean_to_final: list[float] = Field(description="[stream] the mean over positions.")
    mean_norm_ratio: list[float] = Field(description="[stream] the mean over positions of ‖stream‖ / ‖embedding‖: "
                                                     "how much the stream has grown around the embedding.")


def plan(context: Context, request: EmbeddingPersistenceLabRequest) -> Build:
    resolved = context.model
    stack, _ = stack_of(resolved, request.stack)

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        read = forward.target_tokens if stack == "decoder" else forward.tokens
        kept = embedding_persistence(resolved.model, forward.trace, stack=stack)
        context.budget.check([kept.to_embedding, kept.to_final])
        return {
            "model": resolved.name, "tokens": tokens_out(read), "stack": stack, "streams": kept.streams,
            "added": kept.added,
            "to_embedding": [rounded(row) for row in kept.to_embedding.tolist()],
            "to_final": [rounded(row) for row in kept.to_final.tolist()],
            "mean_to_embedding": rounded(kept.mean_to_embedding.tolist()),
            "mean_to_final": rounded(kept.mean_to_final.tolist()),
            "mean_norm_ratio": rounded(kept.mean_norm_ratio.tolist(), 4),
        }

    return build


EXPERIMENT = Experiment(
    name="embedding_persistence", method="POST", request=EmbeddingPersistenceLabRequest,
    response=EmbeddingPersistenceLabOut, plan=plan, hybrid=True,
    summary=summary_of(__doc__),
)
