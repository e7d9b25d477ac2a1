"""The draws follow the distribution the answer shows (χ², p > 0.001), for /api/predict and /api/lab/sampling.

/api/predict: 2,000 requests with seeds 0..1999 and one new token each; the first token's
frequencies are tested against the returned `sampling` distribution. /api/lab/sampling: one
request for 2,000 draws, its counts against its rows' `final` column. Bins expecting fewer
than 5 draws are pooled with the unlisted mass into one bin, as a χ² test needs.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from scipy.stats import chisquare

from tests.app.conftest import BOS, post, tiny_models

N = 2000
TEXT = "the cat sat"
SETTINGS = [  # (temperature, top_k, top_p)
    (1.0, None, None),
    (0.5, 20, None),
    (1.5, None, 0.9),
    (1.0, 40, 0.8),
]


def chi2_p(counts: Counter[int], probs: dict[int, float]) -> float:
    """p-value of the draws `counts` under `probs` (ids -> probability; the rest of the mass is one bin)."""
    unlisted_mass = max(0.0, 1.0 - sum(probs.values()))
    unlisted = sum(n for token, n in counts.items() if token not in probs)  # drawn ids the answer does not list
    assert unlisted == 0 or unlisted_mass > 1e-9, f"drew ids the distribution gives 0: {set(counts) - set(probs)}"
    observed, expected = [], []
    pooled_obs, pooled_exp = unlisted, N * unlisted_mass
    for token, p in probs.items():
        if N * p >= 5:
            observed.append(counts.get(token, 0))
            expected.append(N * p)
        else:
            pooled_obs += counts.get(token, 0)
            pooled_exp += N * p
    if pooled_exp > 0:
        observed.append(pooled_obs)
        expected.append(pooled_exp)
    scale = sum(observed) / sum(expected)  # rounding of the shown probabilities: the totals must agree
    assert math.isclose(scale, 1.0, abs_tol=1e-4)
    return float(chisquare(observed, [e * scale for e in expected]).pvalue)


def _sampling(body: dict) -> dict[int, float]:
    sampling = body["sampling"]
    assert sampling["kept"] == len(sampling["ids"]) and sampling["unlisted_prob"] == 0.0
    return dict(zip(sampling["ids"], sampling["probs"], strict=True))


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), SETTINGS[1:3])  # 2,000 requests each
def test_predict_draws_follow_the_returned_sampling_distribution(
    client: TestClient, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    stop = tiny_models()["gpt"].tokenizer.special_to_id[BOS]  # type: ignore[union-attr]
    request = {"model": "gpt", "text": TEXT, "temperature": temperature, "sample_top_k": top_k, "top_p": top_p,
               "sample_rows": 1000, "max_new_tokens": 1}
    first = post(client, "/api/predict", {**request, "seed": 0}).json()
    probs = _sampling(first)
    assert (first["sampling"]["temperature"], first["sampling"]["top_k"], first["sampling"]["top_p"]) == (
        temperature, top_k, top_p)
    if top_k is not None:
        assert first["sampling"]["kept"] <= top_k or len(set(probs.values())) < len(probs)  # ties may stay
    counts: Counter[int] = Counter()
    for seed in range(N):
        body = post(client, "/api/predict", {**request, "seed": seed}).json()
        tokens = body["generated"]["tokens"]
        counts[tokens[0]["id"] if tokens else stop] += 1  # the end token stops the text before it is added
    assert chi2_p(counts, probs) > 0.001
    again = post(client, "/api/predict", {**request, "seed": 7, "max_new_tokens": 5}).json()["generated"]
    assert post(client, "/api/predict", {**request, "seed": 7, "max_new_tokens": 5}).json()["generated"] == again


def test_predict_table_is_the_full_distribution_and_sampling_the_cut_one(client: TestClient) -> None:
    body = post(client, "/api/predict", {"model": "gpt", "text": TEXT, "top_k": 100, "sample_top_k": 3,
                                         "max_new_tokens": 0}).json()
    assert len(body["top_k"]) == 100 and body["rest_prob"] > 0  # the table is not cut by sample_top_k
    sampling = body["sampling"]
    assert sampling["ids"] == [row["id"] for row in body["top_k"][:3]] and sampling["kept"] == 3
    top3 = sum(row["prob"] for row in body["top_k"][:3])
    for row, p in zip(body["top_k"][:3], sampling["probs"], strict=True):
        assert math.isclose(p, row["prob"] / top3, rel_tol=1e-3)  # renormalised over the kept three (table: 6 digits)


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), SETTINGS)
def test_lab_sampling_draws_follow_its_final_distribution(
    client: TestClient, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    request = {"model": "gpt", "text": TEXT, "temperature": temperature, "top_k": top_k, "top_p": top_p,
               "seed": 5, "draws": N, "show": 100}
    body = post(client, "/api/lab/sampling", request).json()
    counts = Counter({int(token): n for token, n in body["counts"].items()})
    assert sum(counts.values()) == N
    probs = {row["id"]: row["final"] for row in body["rows"] if row["final"] > 0}
    assert chi2_p(counts, probs) > 0.001
    assert post(client, "/api/lab/sampling", request).json()["counts"] == body["counts"]  # seeded
