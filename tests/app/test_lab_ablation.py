"""POST /api/lab/ablation: ablating no head changes nothing, and each head's effect is Lab I's intervention."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post, softmax, trace_logits

TEXT = "the cat sat on"


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
