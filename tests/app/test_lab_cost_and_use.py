"""What attention costs and what the model uses, through the API: FlashAttention = hook_z, KV-cache bytes = the
closed form, cached decoding = recomputation, the logit lens's last layer = the logits, ablating no head changes
nothing, norm placement deterministic, limits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post

TEXT = "the cat sat on"


def trace_logits(client: TestClient, body: dict[str, object]) -> np.ndarray:
    """The model's own logits [pos, d_vocab] from /api/trace at full float32 precision."""
    out = post(client, "/api/trace", {**body, "stages": ["hook_logits"], "encoding": "base64"}).json()
    return decode_tensor(out["stages"]["hook_logits"]).astype(np.float64)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---------------------------------------------------------------- flash


@pytest.mark.parametrize(("model", "extra"), [("gpt", {"layer": 1}), ("bert", {"layer": 0}),
                                              ("translator", {"target_text": "ab", "stack": "decoder", "cross": True})])
@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (3, 2), (64, 64)])
def test_flash_output_equals_the_models_hook_z(client: TestClient, model: str, extra: dict[str, object],
                                               block_q: int, block_k: int) -> None:
    base = {"model": model, "text": TEXT, **extra}
    for head in range(2):
        out = post(client, "/api/lab/flash", {**base, "head": head, "block_q": block_q, "block_k": block_k,
                                              "encoding": "base64"}).json()
        qkv = post(client, "/api/qkv", {**base, "head": head, "encoding": "base64"}).json()
        z = decode_tensor(qkv["tensors"]["z"])
        flash = decode_tensor(out["output"])
        assert np.abs(flash - z.reshape(flash.shape)).max() <= 1e-5 and out["max_diff_z"] <= 1e-5
        assert out["max_diff_naive"] <= 1e-5
        n_q, n_k = len(out["query_tokens"]), len(out["key_tokens"])
        assert out["n_squared_bytes"] == n_q * n_k * 4
        assert out["computed_tiles"] + out["skipped_tiles"] == out["q_tiles"] * out["k_tiles"] == len(out["tiles"]) + \
            out["skipped_tiles"]
        if block_q * block_k < n_q * n_k and block_q * out["d_head"] < n_q * n_k:
            assert out["largest_bytes"] < out["n_squared_bytes"]  # no state held the n × n matrix
        for tile in out["tiles"]:  # after a query tile's last key tile, acc / l is that tile's output
            last = max(t["k_block"] for t in out["tiles"] if t["q_block"] == tile["q_block"])
            if tile["k_block"] == last:
                q0, q1 = tile["q_range"]
                rows = np.array(tile["acc"]) / np.array(tile["l"])[:, None]
                assert np.abs(rows - flash[q0:q1]).max() < 1e-4
    causal = post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "block_q": 2, "block_k": 2}).json()
    assert causal["causal"] and causal["skipped_tiles"] > 0  # tiles wholly in the future are never computed


def test_flash_running_max_only_grows_and_errors_name_the_option(client: TestClient) -> None:
    out = post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "block_q": 4, "block_k": 2}).json()
    for q_block in range(out["q_tiles"]):
        states = [t["m"] for t in out["tiles"] if t["q_block"] == q_block]
        for before, after in zip(states, states[1:], strict=False):
            assert all(b is None or (a is not None and a >= b) for b, a in zip(before, after, strict=True))
    status, code, message = error_of(post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "head": 4}))
    assert (status, code) == (422, "out_of_range") and "Head 4" in message
    status, code, message = error_of(post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "block_q": 0}))
    assert (status, code) == (422, "invalid_request") and "block_q" in message
    status, code, _ = error_of(post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "cross": True}))
    assert (status, code) == (422, "not_in_model")


# ---------------------------------------------------------------- kv cache


def test_kv_cache_bytes_are_the_closed_form_and_gqa_8_of_32_is_a_quarter(client: TestClient) -> None:
    out = client.get("/api/lab/kv-cache", params={"context": 32768, "batch": 3, "dtype": "bfloat16"}).json()
    rows = {row["name"]: row for row in out["published"]}
    assert {"GPT-2 small", "GPT-3 175B", "Llama-2-7B", "Llama-2-70B", "Llama-3-8B", "Mistral-7B", "Qwen2.5-0.5B",
            "Qwen2.5-7B", "SmolLM2-135M"} <= set(rows)
    for row in out["published"]:
        positions = min(32768, row["context"], row["sliding_window"] or 32768)
        per_token = 2 * row["layers"] * row["kv_heads"] * row["d_head"] * 2
        assert row["cached_positions"] == positions
        assert row["bytes_per_token"] == per_token and row["total_bytes"] == per_token * positions * 3
    assert rows["Llama-2-70B"]["kv_heads"] == 8 and rows["Mistral-7B"]["cached_positions"] == 4096
    assert rows["Llama-2-7B"]["cached_positions"] == 4096 and rows["GPT-2 small"]["cached_positions"] == 1024
    assert rows["GPT-3 175B"]["total_bytes"] == 2 * 96 * 96 * 128 * 2 * 2048 * 3
    same = client.get("/api/lab/kv-cache", params={"context": 4096, "dtype": "bfloat16"}).json()
    by_name = {row["name"]: row for row in same["published"]}
    assert by_name["Llama-3-8B"]["total_bytes"] * 4 == by_name["Llama-2-7B"]["total_bytes"]  # 8 of 32 KV heads: ¼
    models = {m["model"]: m for m in out["models"]}
    assert set(models) == {"gpt", "bert", "translator"} and not models["bert"]["decodes"]
    assert models["bert"]["variants"] == [] and "encoder" in models["bert"]["note"]  # no bars, and why
    gpt = {v["attention"]: v for v in models["gpt"]["variants"]}
    assert models["gpt"]["own"] == "GQA" and [gpt[k]["kv_heads"] for k in ("MHA", "GQA", "MQA")] == [4, 2, 1]
    assert all(v["cached_positions"] == 64 for v in gpt.values())  # the model's n_ctx, not the 32768 asked
    assert gpt["MHA"]["total_bytes"] == 2 * 2 * 4 * 8 * 2 * 64 * 3 == 4 * gpt["MQA"]["total_bytes"]
    own = client.get("/api/lab/kv-cache").json()  # no context asked: each model's own
    assert own["context"] is None and {r["name"]: r["cached_positions"] for r in own["published"]}["Llama-3-8B"] == 8192
    status, code, message = error_of(client.get("/api/lab/kv-cache", params={"dtype": "float64"}))
    assert (status, code) == (422, "invalid_request") and "dtype" in message
    status, code, message = error_of(client.get("/api/lab/kv-cache", params={"context": 0}))
    assert (status, code) == (422, "invalid_request") and "context" in message


# ---------------------------------------------------------------- generate


@pytest.mark.parametrize("model", ["gpt", "translator"])
def test_cached_decoding_equals_recomputation_at_every_step(client: TestClient, model: str) -> None:
    out = post(client, "/api/lab/generate", {"model": model, "text": TEXT, "max_new_tokens": 6}).json()
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
    status, code, _ = error_of(post(client, "/api/lab/generate", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")
    status, code, message = error_of(post(client, "/api/lab/generate", {"text": TEXT, "max_new_tokens": 65}))
    assert (status, code) == (422, "invalid_request") and "max_new_tokens" in message


# ---------------------------------------------------------------- logit lens and ablation


LENS_BODIES = [{"model": "gpt", "text": TEXT}, {"model": "translator", "text": "hi", "target_text": "ab"}]


@pytest.mark.parametrize("body", LENS_BODIES)
def test_the_logit_lens_last_layer_is_the_models_logits(client: TestClient, body: dict[str, object]) -> None:
    out = post(client, "/api/lab/logit-lens", {**body, "k": 4}).json()
    probs = softmax(trace_logits(client, body))  # [pos, d_vocab]
    assert out["max_diff_last"] <= 1e-5 and out["layers"][0] == "embed" and len(out["top"][-1]) == len(probs)
    for pos, cell in enumerate(out["top"][-1]):
        assert cell["ids"] == list(np.argsort(-probs[pos])[:4])
        assert np.abs(np.array(cell["probs"]) - probs[pos][cell["ids"]]).max() <= 1e-5
    ids = [t["id"] for t in out["tokens"]]
    following = [probs[p, ids[p + 1]] for p in range(len(ids) - 1)]
    assert np.abs(np.array(out["next_token_probs"][-1]) - following).max() <= 1e-5
    status, code, _ = error_of(post(client, "/api/lab/logit-lens", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")
    status, code, message = error_of(post(client, "/api/lab/logit-lens", {"model": "gpt", "text": TEXT, "k": 0}))
    assert (status, code) == (422, "invalid_request") and "'k'" in message


def test_ablation_no_head_changes_nothing_and_each_head_is_lab_one(client: TestClient) -> None:
    body = {"model": "gpt", "text": TEXT}
    out = post(client, "/api/lab/ablation", {**body, "position": 5}).json()
    assert out["none_ablated"] == {"loss_change": 0.0, "prob_change": 0.0} and out["position"] == 5
    clean = softmax(trace_logits(client, body))
    assert abs(clean[5, out["chosen_id"]] - out["clean_prob"]) <= 1e-5 and out["chosen_id"] == int(clean[5].argmax())
    assert len(out["heads"]) == 2 * 4
    for effect in out["heads"][::3]:  # the same change as Lab I's ablate_heads, through /api/trace
        ablated = softmax(trace_logits(client, {**body, "interventions": {"ablate_heads": [[effect["layer"],
                                                                                            effect["head"]]]}}))
        assert abs(ablated[5, out["chosen_id"]] - effect["prob"]) <= 1e-5
        assert abs(effect["prob_change"] - (effect["prob"] - out["clean_prob"])) <= 1e-9
        assert abs(sum(effect["weights"]) - 1) < 1e-4 and len(effect["weights"]) == len(out["tokens"])
        assert all(w == 0 for w in effect["weights"][6:])  # position 5 sees no later token
    status, code, message = error_of(post(client, "/api/lab/ablation", {**body, "position": 99}))
    assert (status, code) == (422, "out_of_range") and "Position 99" in message
    status, code, _ = error_of(post(client, "/api/lab/ablation", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")


# ---------------------------------------------------------------- norm placement and complexity


def test_norm_placement_is_deterministic_for_a_seed(client: TestClient) -> None:
    from lab.norm_placement import NormPlacementSettings, compare_norm_placement

    body = {"n_layers": 6, "d_model": 32, "n_heads": 2, "steps": 3, "batch": 4, "seq_len": 16, "seed": 5}
    out = post(client, "/api/lab/norm-placement", body).json()
    direct = compare_norm_placement(NormPlacementSettings(**{k: v for k, v in body.items()}))
    for placement in ("pre", "post"):  # a fresh computation, not the server's cache, gives the same numbers
        assert out[placement] == direct["runs"][placement]  # type: ignore[index]
        assert len(out[placement]["ffn_out_grad_norms"]) == 6 and len(out[placement]["losses"]) == 3
    other = post(client, "/api/lab/norm-placement", {**body, "seed": 6}).json()
    assert other["post"]["ffn_out_grad_norms"] != out["post"]["ffn_out_grad_norms"]
    status, code, message = error_of(post(client, "/api/lab/norm-placement", {"d_model": 64, "n_heads": 3}))
    assert (status, code) == (422, "invalid_option") and "`n_heads`" in message
    status, code, message = error_of(post(client, "/api/lab/norm-placement", {"n_layers": 24, "d_model": 256,
                                                                              "steps": 500}))
    assert (status, code) == (422, "too_much_work") and "`steps`" in message
    status, code, message = error_of(post(client, "/api/lab/norm-placement", {"n_layers": 25}))
    assert (status, code) == (422, "invalid_request") and "n_layers" in message


def test_complexity_memory_is_quadratic_naive_and_flat_tiled_and_cached(client: TestClient) -> None:
    body = {"lengths": [512, 128, 256], "d_model": 64, "n_heads": 2, "block": 64}
    out = post(client, "/api/lab/complexity", body).json()
    assert [m["n"] for m in out["measurements"]] == [128, 256, 512] and out["d_head"] == 32
    assert out["memory_source"] == "counted"  # the tests run on a CPU
    for m in out["measurements"]:
        assert m["naive_peak_bytes"] == 2 * 2 * m["n"] ** 2 * 4 and m["n_squared_bytes"] == m["n"] ** 2 * 4
        assert m["tiled_peak_bytes"] == (2 * 2 * 64 * 64 + 2 * 64 * 34) * 4  # one tile, whatever n
    assert abs(out["naive_memory_fit"]["exponent"] - 2) < 1e-9 and abs(out["tiled_memory_fit"]["exponent"]) < 1e-9
    assert post(client, "/api/lab/complexity", body).json() == out  # cached: the same timings again
    status, code, message = error_of(post(client, "/api/lab/complexity", {"d_model": 64, "n_heads": 3}))
    assert (status, code) == (422, "invalid_option") and "`n_heads`" in message
    status, code, message = error_of(post(client, "/api/lab/complexity", {"lengths": [4096], "n_heads": 16,
                                                                          "d_model": 256}))
    assert (status, code) == (422, "too_much_work") and "`lengths`" in message
    status, code, message = error_of(post(client, "/api/lab/complexity", {"lengths": [4096, 2048], "block": 16}))
    assert (status, code) == (422, "too_much_work") and "`block`" in message
    status, code, message = error_of(post(client, "/api/lab/complexity", {"lengths": [5000]}))
    assert (status, code) == (422, "invalid_request") and "lengths" in message
