"""What an operator on the open internet expects: headers, closed CORS, no client paths, no pickles, quiet logs."""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.factory import create_app
from tests.app.conftest import make_registry, make_settings

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert(1)</script> ../../etc/passwd %2e%2e%2f /etc/shadow 密码 \u202e\ud800"
PATHS = ["../../etc/passwd", "..%2f..%2fetc%2fpasswd", "%2e%2e%2f%2e%2e%2fapp%2fmain.py", "/etc/passwd",
         "C:\\Windows\\win.ini", str(ROOT / "model" / "weights" / "tiny-gpt"), "file:///etc/passwd"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_app(make_settings(Path(tmp_path_factory.mktemp("sec"))), make_registry())
    with TestClient(app) as test_client:
        yield test_client


def post(client: TestClient, path: str, body: object):  # noqa: ANN201
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


def test_every_kind_of_response_carries_the_security_headers(client: TestClient) -> None:
    responses = {
        "page": client.get("/"), "api": client.get("/api/health"), "static": client.get("/static/js/main.js"),
        "404": client.get("/nowhere"), "422": post(client, "/api/trace", {"text": ""}),
        "413": post(client, "/api/trace", {"text": "x" * (65 * 1024)}), "docs": client.get("/docs"),
    }
    for kind, response in responses.items():
        assert response.headers["x-content-type-options"] == "nosniff", kind
        assert response.headers["referrer-policy"] == "no-referrer", kind
        assert response.headers["x-frame-options"] == "DENY", kind
    policy = responses["page"].headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-eval" not in policy


def test_cors_is_closed_by_default_and_open_only_to_named_origins(tmp_path: Path) -> None:
    preflight = {"origin": "http://evil.test", "access-control-request-method": "POST"}
    with TestClient(create_app(make_settings(tmp_path), make_registry())) as closed:
        assert "access-control-allow-origin" not in closed.options("/api/trace", headers=preflight).headers
        assert "access-control-allow-origin" not in closed.get("/api/health", headers={"origin": "http://evil.test"}).headers
    settings = make_settings(tmp_path, cors_origins=["http://school.test"])
    with TestClient(create_app(settings, make_registry())) as opened:
        allowed = opened.get("/api/health", headers={"origin": "http://school.test"})
        assert allowed.headers["access-control-allow-origin"] == "http://school.test"
        assert "access-control-allow-origin" not in opened.get("/api/health", headers=preflight).headers


@pytest.mark.parametrize("value", PATHS)
def test_no_string_field_reaches_the_disk(client: TestClient, value: str) -> None:
    for path, body in [("/api/trace", {"model": value, "text": "hi"}), ("/api/trace", {"text": value}),
                       ("/api/trace", {"model": "gpt", "text": "hi", "stages": [value]}),
                       ("/api/trace", {"model": "gpt", "text": "hi", "target_text": value})]:
        response = post(client, path, body)
        assert response.status_code in (200, 404, 422), response.text
        assert "root:" not in response.text and "[fonts]" not in response.text
    assert client.get(f"/api/models/{value}").status_code == 404
    assert client.get(f"/static/{value}").status_code == 404
    assert client.get("/api/positional-encoding", params={"model": value}).status_code in (404, 422)


@pytest.mark.parametrize("path", ["/static/../app/factory.py", "/static/%2e%2e/app/factory.py",
                                  "/static/..%2fapp%2ffactory.py",
                                  "/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/docs-assets/..%2f..%2fapp%2ffactory.py"])
def test_static_files_stay_inside_their_folder(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404 and "create_app" not in response.text


def test_weights_are_only_ever_read_as_safetensors(tmp_path: Path) -> None:
    from checkpoints import CheckpointError, load_checkpoint

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 8}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04 a pickle that must never be opened")
    with pytest.raises(CheckpointError, match="safetensors"):
        load_checkpoint(tmp_path)
    for folder in ("model", "app", "training"):
        for source in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
            imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            assert not calls & {"torch.load", "pickle.load", "pickle.loads"}, source
            assert "pickle" not in imports, source


def test_hostile_text_leaves_no_trace_in_the_logs(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for path in ("/api/tokenize", "/api/trace", "/api/predict", "/api/attention"):
        post(client, path, {"model": "gpt", "text": HOSTILE, "layer": 0})
        post(client, path, {"model": "gpt", "text": HOSTILE, "layer": 99, "stages": ["nope"]})  # error paths too
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for fragment in ("<script>", "etc/passwd", "密码", "shadow"):
        assert fragment not in logged
