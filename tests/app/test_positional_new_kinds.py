"""Adding a positional encoding is one class in model/positional.py: a kind of each family, registered here
at test time only, is built into a model, checked by the config, answered by GET /api/positional-encoding
with its own numbers and listed by GET /api/positional-encoding/kinds, with no other edit."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from app.schemas import InlineConfig, PositionalQuery
from app.tensors import decode_tensor
from model.config import ConfigError, TransformerConfig
from model.positional import (
    KINDS,
    BiasKind,
    EmbeddingKind,
    PositionalKind,
    RotaryKind,
    Sizes,
    UnknownKind,
    alibi_slopes,
    kind_of,
    register,
    rope_angles,
    sinusoidal_table,
)
from model.transformer import Transformer
from tests.app.conftest import error_of, post


class ScaledSinusoid(EmbeddingKind):
    """Half the sinusoidal table: an embedding kind."""

    name = "scaled_sinusoid"
    paper = "a test"

    def check(self, d_model: int, n_heads: int) -> None:
        if d_model % 2:
            raise ValueError(f"positional encoding '{self.name}' needs an even d_model, got {d_model}")

    def table(self, n_pos: int, d_model: int) -> torch.Tensor:
        return 0.5 * sinusoidal_table(n_pos, d_model)


class SlowRope(RotaryKind):
    """RoPE turning four times slower: a rotary kind (its size check is the family's)."""

    name = "slow_rope"
    paper = "a test"

    def angles(self, n_pos: int, d_head: int, base: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return rope_angles(n_pos, d_head, base, dtype) / 4


class SteepBias(BiasKind):
    """ALiBi with twice the slopes: a bias kind."""

    name = "steep_bias"
    paper = "a test"

    def slopes(self, n_heads: int) -> torch.Tensor:
        return 2 * alibi_slopes(n_heads)


NEW: dict[str, tuple[type[PositionalKind], str]] = {  # each new kind and the shipped kind it varies
    ScaledSinusoid.name: (ScaledSinusoid, "sinusoidal"),
    SlowRope.name: (SlowRope, "rope"),
    SteepBias.name: (SteepBias, "alibi"),
}


@pytest.fixture
def new_kinds() -> Iterator[None]:
    shipped = dict(KINDS)
    for cls, _ in NEW.values():
        register(cls)
    yield
    KINDS.clear()
    KINDS.update(shipped)


def small(kind: str, **changes: object) -> TransformerConfig:
    return TransformerConfig(**{"d_model": 16, "n_layers": 1, "n_heads": 2, "n_ctx": 8, "vocab_size": 11,
                                "pos_encoding": kind, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(NEW))
def test_the_model_applies_the_new_kind(new_kinds: None, name: str) -> None:
    model = Transformer(small(name)).eval()
    _, trace = model.run_with_trace(torch.tensor([[1, 2, 3, 4, 5]]))
    kind = KINDS[name]
    if isinstance(kind, EmbeddingKind):
        torch.testing.assert_close(trace["hook_pos_embed"], kind.table(5, 16))
    if isinstance(kind, RotaryKind):
        q, rot_q = trace["blocks.0.attn.hook_q"], trace["blocks.0.attn.hook_rot_q"]
        torch.testing.assert_close(rot_q, kind.rotate(q, kind.angles(5, 8, 10000.0)))
        assert not torch.allclose(rot_q, kind_of("rope").rotate(q, rope_angles(5, 8)))
    if isinstance(kind, BiasKind):
        raw, scaled = trace["blocks.0.attn.hook_scores_raw"], trace["blocks.0.attn.hook_scores_scaled"]
        torch.testing.assert_close(scaled, raw / 8**0.5 + kind.bias(2, 5, 5, causal=True))
    for hook, where in (("hook_pos_embed", "embedding"), ("blocks.0.attn.hook_rot_q", "q_k")):
        assert (hook in trace) == (kind.where == where)


@pytest.mark.parametrize("name", [ScaledSinusoid.name, SlowRope.name])
def test_the_config_asks_the_new_kind_for_its_sizes(new_kinds: None, name: str) -> None:
    with pytest.raises(ConfigError, match=f"'{name}'.*even d_(model|head)"):
        small(name, d_model=9, n_heads=1)


def test_a_bias_kind_checks_its_heads(new_kinds: None) -> None:
    with pytest.raises(ValueError, match="'steep_bias'.*divisible by n_heads"):
        KINDS[SteepBias.name].check(10, 3)


@pytest.mark.parametrize("name", list(NEW))
def test_the_api_answers_with_the_new_kinds_own_numbers(new_kinds: None, client: TestClient, name: str) -> None:
    params = {"length": 6, "d_model": 16, "n_heads": 2, "causal": "false"}
    answer = client.get("/api/positional-encoding", params={**params, "kind": name})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["kind"] == name
    shown = KINDS[name].show(Sizes(length=6, d_model=16, n_heads=2, causal=False))
    assert set(body["tensors"]) == set(shown)
    _, shipped = NEW[name]
    other = client.get("/api/positional-encoding", params={**params, "kind": shipped}).json()
    assert set(other["tensors"]) == set(shown)  # the same family shows the same tensors ...
    differs = False
    for key, (tensor, dims) in shown.items():
        got = decode_tensor(body["tensors"][key])
        assert body["tensors"][key]["dims"] == list(dims)
        np.testing.assert_allclose(got, tensor.numpy(), rtol=1e-3, atol=1e-4)
        differs |= not np.allclose(got, decode_tensor(other["tensors"][key]), rtol=1e-3, atol=1e-4)
    assert differs  # ... with numbers of its own, not the shipped kind's


@pytest.mark.parametrize("name", list(NEW))
def test_the_kinds_list_and_schemas_follow(new_kinds: None, client: TestClient, name: str) -> None:
    listed = client.get("/api/positional-encoding/kinds").json()
    assert [k["name"] for k in listed] == list(KINDS) and KINDS[name].to_dict() in listed
    assert name in InlineConfig.model_json_schema()["properties"]["pos_encoding"]["enum"]
    assert name in PositionalQuery.model_json_schema()["properties"]["kind"]["anyOf"][0]["enum"]


@pytest.mark.parametrize("name", list(NEW))
def test_an_inline_model_of_the_new_kind_runs(new_kinds: None, client: TestClient, name: str) -> None:
    config = {"d_model": 16, "n_layers": 1, "n_heads": 2, "pos_encoding": name}
    assert post(client, "/api/trace", {"config": config, "text": "abc"}).status_code == 200
    if name == SteepBias.name:
        return  # a bias kind works at any d_head
    status, code, message = error_of(post(client, "/api/trace", {"config": {**config, "d_model": 9, "n_heads": 1},
                                                                  "text": "abc"}))
    assert (status, code) == (422, "invalid_config") and f"'{name}'" in message


def test_odd_sizes_are_422_naming_the_kind_and_the_field(client: TestClient) -> None:
    status, code, message = error_of(client.get("/api/positional-encoding", params={"kind": "sinusoidal",
                                                                                    "d_model": 7}))
    assert (status, code) == (422, "conflicting_fields") and "'sinusoidal'" in message and "d_model" in message
    status, code, message = error_of(post(client, "/api/trace", {"config": {"d_model": 9, "n_heads": 1,
                                                                            "pos_encoding": "rope"}, "text": "x"}))
    assert (status, code) == (422, "invalid_config") and "'rope'" in message and "d_head" in message


def test_an_unknown_kind_is_named(client: TestClient) -> None:
    with pytest.raises(UnknownKind, match="'fourier'.*" + re.escape(", ".join(KINDS))):  # every registered kind
        kind_of("fourier")
    with pytest.raises(ConfigError, match="'fourier'"):
        small("fourier")
    status, code, message = error_of(client.get("/api/positional-encoding", params={"kind": "fourier"}))
    assert (status, code) == (422, "invalid_request") and "'fourier'" in message and "alibi" in message
    status, code, message = error_of(post(client, "/api/trace", {"config": {"pos_encoding": "fourier"}, "text": "x"}))
    assert (status, code) == (422, "invalid_request") and "'fourier'" in message
    status, _, message = error_of(client.get("/api/positional-encoding", params={"kind": "none"}))
    assert status == 422 and "no numbers to show" in message
    secret = "<b>my secret sentence</b>"
    response = client.get("/api/positional-encoding", params={"kind": secret})
    assert response.status_code == 422 and secret not in response.text  # only a plain word is repeated back
