"""Interventions through the API: part of the cache key, checked against the model, errors that name them."""

from __future__ import annotations

import torch
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

TEXT = {"model": "gpt", "text": "the cat sat"}
PATTERN = "blocks.0.attn.hook_pattern"


def pattern(client: TestClient, **extra: object) -> torch.Tensor:
    body = post(client, "/api/trace", {**TEXT, "stages": [PATTERN], "top_k": 0, **extra}).json()
    return torch.tensor(body["stages"][PATTERN]["data"])  # [head, q_pos, k_pos]


def test_no_mask_is_a_different_run_and_the_original_stays_cached(client: TestClient) -> None:
    original = pattern(client)
    peeking = pattern(client, interventions={"no_mask": True})
    assert (original.triu(1) == 0).all() and (peeking.triu(1) > 0).any()
    assert torch.equal(pattern(client), original)
    assert torch.equal(pattern(client, interventions={}), original)  # nothing asked: the plain run


def test_interventions_reach_attention_and_predict(client: TestClient) -> None:
    plain = post(client, "/api/attention", {**TEXT, "layer": 1, "head": 0}).json()
    hot = post(client, "/api/attention", {**TEXT, "layer": 1, "head": 0, "interventions": {"temperature": 0.1}}).json()
    assert hot["pattern"]["data"] != plain["pattern"]["data"]
    every_head = [[layer, head] for layer in range(2) for head in range(4)]
    base = post(client, "/api/predict", {**TEXT, "seed": 1, "max_new_tokens": 2}).json()
    ablated = post(client, "/api/predict", {**TEXT, "seed": 1, "max_new_tokens": 2,
                                            "interventions": {"ablate_heads": every_head}}).json()
    assert [r["prob"] for r in ablated["top_k"]] != [r["prob"] for r in base["top_k"]]


def test_shuffle_runs_the_tokens_in_another_order(client: TestClient) -> None:
    tokens = post(client, "/api/tokenize", TEXT).json()["tokens"]
    order = list(range(len(tokens)))[::-1]
    body = post(client, "/api/trace", {**TEXT, "interventions": {"shuffle": order}}).json()
    assert [t["text"] for t in body["tokens"]] == [tokens[i]["text"] for i in order]


def test_bad_interventions_are_named(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/trace", {**TEXT, "interventions": {"ablate_heads": [[5, 0]]}}))
    assert (status, code) == (422, "invalid_intervention") and "ablate_heads" in message
    status, code, message = error_of(post(client, "/api/trace", {**TEXT, "interventions": {"shuffle": [0, 0, 1]}}))
    assert (status, code) == (422, "invalid_intervention") and "shuffle" in message
    status, code, message = error_of(post(client, "/api/trace", {**TEXT, "interventions": {"no_scal": True}}))
    assert (status, code) == (422, "invalid_request") and "no_scale" in message  # the right name, not the typo
    assert "no_scal," not in message and "'no_scal'" not in message
    status, code, message = error_of(post(client, "/api/trace", {**TEXT, "interventions": {"window": 0}}))
    assert (status, code) == (422, "invalid_request") and "window" in message


def test_the_loss_of_the_text_comes_with_the_next_token_table(client: TestClient) -> None:
    body = post(client, "/api/trace", {**TEXT, "stages": ["hook_logits"]}).json()
    logits = torch.tensor(body["stages"]["hook_logits"]["data"])  # [pos, d_vocab]
    ids = torch.tensor([t["id"] for t in body["tokens"]])
    expected = torch.nn.functional.cross_entropy(logits[:-1], ids[1:]).item()
    assert abs(body["loss"] - expected) < 2e-3  # logits travel rounded to 4 significant digits
    every_head = [[layer, head] for layer in range(2) for head in range(4)]
    changed = post(client, "/api/predict", {**TEXT, "seed": 0, "interventions": {"ablate_heads": every_head}}).json()
    assert changed["loss"] != body["loss"]


def test_ablate_stack_picks_one_stack_and_is_refused_for_a_single_stack(client: TestClient) -> None:
    body = {"model": "translator", "text": "abc", "target_text": "xy", "stages": ["*.blocks.0.attn.hook_z"]}
    ablated = post(client, "/api/trace", {**body, "interventions": {"ablate_heads": [[0, 1]],
                                                                    "ablate_stack": "decoder"}}).json()["stages"]
    plain = post(client, "/api/trace", body).json()["stages"]
    assert ablated["encoder.blocks.0.attn.hook_z"]["data"] == plain["encoder.blocks.0.attn.hook_z"]["data"]
    assert all(row[1] == [0.0] * len(row[1]) for row in ablated["decoder.blocks.0.attn.hook_z"]["data"])
    status, code, message = error_of(post(client, "/api/trace", {**TEXT, "interventions": {
        "ablate_heads": [[0, 1]], "ablate_stack": "decoder"}}))
    assert (status, code) == (422, "invalid_intervention") and "ablate_stack" in message
