"""POST /api/lab/cached-decoding: cached decoding equals recomputation at every step."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

TEXT = "the cat sat on"


@pytest.mark.parametrize("model", ["gpt", "translator"])
def test_cached_decoding_equals_recomputation_at_every_step(client: TestClient, model: str) -> None:
    out = post(client, "/api/lab/cached-decoding", {"model": model, "text": TEXT, "max_new_tokens": 6}).json()
    loaded = client.app.state.service.registry.get(model)  # type: ignore[attr-defined]
    cfg = loaded.model.cfg
    prompt = [t["id"] for t in out["tokens"]]
    generated = [s["id"] for s in out["steps"]]
    assert len(generated) == 6
    layers = cfg.decoder_layers if model == "translator" else cfg.n_layers
    ids = torch.tensor([prompt + generated])
    with torch.inference_mode():  # the whole sequence in one pass, no cache
        if model == "translator":
            source = torch.tensor([[t.id for t in loaded.tokenizer.encode(TEXT)]])
            full = loaded.model(source, target_tokens=ids)[0]
        else:
            full = loaded.model(ids)[0]
    for i, step in enumerate(out["steps"]):
        assert step["max_diff"] <= 1e-5
        here = full[len(prompt) - 1 + i]
        assert np.abs(np.array(step["top_logits"]) - here[step["top_ids"]].numpy()).max() <= 1e-5
        assert step["id"] == int(here.argmax())
        positions = len(prompt) + i
        assert step["cache_positions"] == positions and step["fed"] == (len(prompt) if i == 0 else 1)
        assert step["cache_bytes"] == step["formula_bytes"] == 2 * layers * cfg.kv_heads * cfg.d_head * 4 * positions
        assert step["cached_cells"] == (len(prompt) ** 2 + sum(range(len(prompt) + 1, positions + 1))) * \
            cfg.n_heads * layers
        assert step["recomputed_cells"] == sum(n * n for n in range(len(prompt), positions + 1)) * cfg.n_heads * layers
    assert 0 < out["saved_fraction"] < 1
    status, code, _ = error_of(post(client, "/api/lab/cached-decoding", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")
    status, code, message = error_of(post(client, "/api/lab/cached-decoding", {"text": TEXT, "max_new_tokens": 65}))
    assert (status, code) == (422, "invalid_request") and "max_new_tokens" in message
