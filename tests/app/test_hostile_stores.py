"""Issue 40, round 2 of hostile stores: manifests that nest deep or are huge, links out of the store (Ollama and
LM Studio), FIFOs, devices and directories in place of files, and absolute paths in GET /api/health.

Every case is a small file (or a sparse one) written here; an audit hook on "open" records every file the process
opens while the stores are read, and nothing outside the store may be among them."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.catalogue import build_registry
from tests.app.conftest import make_settings

MODEL_LAYER = "application/vnd.ollama.image.model"
OPENED: list[str] | None = None  # while a test records: every path opened by this process


def _record_opens(event: str, args: tuple[object, ...]) -> None:
    if OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_record_opens)  # an audit hook cannot be removed: it records only while OPENED is a list


@pytest.fixture
def opened() -> Iterator[list[str]]:
    global OPENED
    OPENED = []
    try:
        yield OPENED
    finally:
        OPENED = None


@pytest.fixture(scope="module")
def good_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gguf = pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    from tests.checkpoints.gguf_files import tiny_hf, write_gguf

    path = tmp_path_factory.mktemp("gguf") / "good.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType.F32)
    return path


def manifest_path(root: Path, model: str, tag: str = "latest") -> Path:
    path = root / "manifests" / "registry.ollama.ai" / "library" / model / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def good_store(root: Path, good: Path) -> Path:
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / f"sha256-{digest}").write_bytes(good.read_bytes())
    manifest_path(root, "tiny").write_text(json.dumps({"layers": [{"mediaType": MODEL_LAYER,
                                                                   "digest": f"sha256:{digest}"}]}))
    return root


def refused(registry: object) -> dict[str, str]:
    return {r.name: r.reason for r in registry.refusals()}  # type: ignore[attr-defined]


def test_a_deep_or_huge_manifest_skips_that_entry_only(good_gguf: Path, tmp_path: Path, opened: list[str]) -> None:
    """Failures 1 and 2: 100,000 nested brackets (RecursionError) and a 50 GB sparse manifest (MemoryError) ended
    start-up. Now each is one refused entry, the depth measured before parsing and the size before opening."""
    root = good_store(tmp_path / "ollama", good_gguf)
    manifest_path(root, "deep").write_text("[" * 100_000 + "]" * 100_000)
    manifest_path(root, "deepobject").write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
    with manifest_path(root, "huge").open("wb") as huge:
        huge.truncate(50 << 30)  # sparse: 50 GB long, no blocks on disk
    with manifest_path(root, "justover").open("wb") as over:
        over.truncate((1 << 20) + 1)
    start = time.perf_counter()
    opened.clear()  # what the test itself wrote is not counted
    registry = build_registry(make_settings(tmp_path, ollama_models=str(root)))
    assert time.perf_counter() - start < 5
    assert registry.names() == ["tiny:latest"]
    reasons = refused(registry)
    assert "nests 100000 levels deep; the limit is 16 (not parsed)" in reasons["deep:latest"]
    assert "nests 50000 levels deep" in reasons["deepobject:latest"]
    assert "is 53,687,091,200 bytes; the limit is 1,048,576 (not read)" in reasons["huge:latest"]
    assert "is 1,048,577 bytes" in reasons["justover:latest"]
    assert not any(path.endswith(("huge", "justover")) for path in opened)  # refused by size, never opened


def test_links_out_of_an_ollama_store_are_refused_without_being_opened(good_gguf: Path, tmp_path: Path,
                                                                       opened: list[str]) -> None:
    """Failure 3: a manifest linked to /etc/passwd was read in full; one linked to an outside JSON file was parsed
    and its digest shown in /api/health. Both are refused now, like a folder on the way that links out."""
    root = good_store(tmp_path / "ollama", good_gguf)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.json"
    secret.write_text(json.dumps({"layers": [{"mediaType": MODEL_LAYER, "digest": "SECRET-DIGEST-TEXT"}]}))
    (outside / "model" / "tag").parent.mkdir()
    (outside / "model" / "tag").write_text(secret.read_text())
    manifest_path(root, "passwd").symlink_to("/etc/passwd")
    manifest_path(root, "json").symlink_to(secret)
    manifest_path(root, "zero").symlink_to("/dev/zero")
    manifest_path(root, "sparse").symlink_to(outside / "sparse")
    with (outside / "sparse").open("wb") as sparse:
        sparse.truncate(6 << 30)
    (root / "manifests" / "registry.ollama.ai" / "linked").symlink_to(outside)  # a namespace folder out of it
    opened.clear()  # what the test itself wrote is not counted
    registry = build_registry(make_settings(tmp_path, ollama_models=str(root)))
    assert registry.names() == ["tiny:latest"]
    reasons = refused(registry)
    for name in ("passwd:latest", "json:latest", "zero:latest", "sparse:latest"):
        assert "is a link out of the store (not opened)" in reasons[name], (name, reasons)
    assert "is a link out of the store" in reasons["manifests/registry.ollama.ai/linked"]
    assert "SECRET-DIGEST-TEXT" not in str(reasons)
    escaped = [path for path in opened if path.startswith((str(outside), "/etc/passwd", "/dev/zero"))]
    assert escaped == []


def test_fifo_device_and_directory_manifests_are_refused_with_a_reason(good_gguf: Path, tmp_path: Path,
                                                                       opened: list[str]) -> None:
    """Also found: a FIFO and a directory in a manifest's place never appeared in `refused` (a device is outside the
    store: /dev/zero is refused as a link out, above)."""
    root = good_store(tmp_path / "ollama", good_gguf)
    os.mkfifo(manifest_path(root, "fifo"))  # opening it to read would block start-up forever
    manifest_path(root, "folder").mkdir()
    start = time.perf_counter()
    opened.clear()  # what the test itself wrote is not counted
    registry = build_registry(make_settings(tmp_path, ollama_models=str(root)))
    assert time.perf_counter() - start < 5
    reasons = refused(registry)
    assert "is a FIFO, not a file" in reasons["fifo:latest"]
    assert "is a directory, not a file" in reasons["folder:latest"]
    assert not any(path.endswith("fifo/latest") for path in opened)


def test_lmstudio_folder_never_leaves_its_root(good_gguf: Path, tmp_path: Path, opened: list[str]) -> None:
    """Failure 3, LM Studio: an outside GGUF linked in was served, and a link to /etc/passwd was opened."""
    root = tmp_path / "lmstudio"
    repo = root / "someone" / "Tiny-GGUF"
    repo.mkdir(parents=True)
    (repo / "tiny.gguf").write_bytes(good_gguf.read_bytes())
    outside = tmp_path / "outside"
    (outside / "Repo").mkdir(parents=True)
    (outside / "Repo" / "elsewhere.gguf").write_bytes(good_gguf.read_bytes())
    (repo / "linked.gguf").symlink_to(outside / "Repo" / "elsewhere.gguf")
    (repo / "passwd.gguf").symlink_to("/etc/passwd")
    (repo / "zero.gguf").symlink_to("/dev/zero")
    (repo / "inside.gguf").symlink_to(repo / "tiny.gguf")  # a link that stays inside is followed
    (root / "publisher").symlink_to(outside)  # a publisher folder out of it: never listed
    os.mkfifo(repo / "fifo.gguf")
    (repo / "folder.gguf").mkdir()
    opened.clear()
    registry = build_registry(make_settings(tmp_path, lmstudio_models=str(root)))
    assert sorted(registry.names()) == ["inside", "tiny"]
    reasons = refused(registry)
    for name in ("linked", "passwd", "zero"):
        assert "is a link out of the store (not opened)" in reasons[name], (name, reasons)
    assert "is a link out of the store" in reasons["publisher"]
    assert "is a FIFO, not a file" in reasons["fifo"] and "is a directory, not a file" in reasons["folder"]
    escaped = [path for path in opened if path.startswith((str(outside), "/etc/passwd", "/dev/zero"))]
    assert escaped == [] and not any(path.endswith("fifo.gguf") for path in opened)


def test_health_shows_store_relative_names_and_the_log_the_absolute_paths(
        good_gguf: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Also found: GET /api/health showed every client the absolute paths of the operator's manifests and blobs."""
    from fastapi.testclient import TestClient

    from app.factory import create_app

    root = good_store(tmp_path / "ollama", good_gguf)
    manifest_path(root, "notjson").write_text("{")
    manifest_path(root, "missing").write_text(json.dumps({"layers": [{"mediaType": MODEL_LAYER,
                                                                      "digest": "sha256:" + "3" * 64}]}))
    manifest_path(root, "passwd").symlink_to("/etc/passwd")
    (root / "blobs" / ("sha256-" + "4" * 64)).write_bytes(b"GGUF" + b"\0" * 60)  # a blob that is not a valid GGUF
    manifest_path(root, "badblob").write_text(json.dumps({"layers": [{"mediaType": MODEL_LAYER,
                                                                      "digest": "sha256:" + "4" * 64}]}))
    lmstudio = tmp_path / "lmstudio" / "someone" / "Repo"
    lmstudio.mkdir(parents=True)
    (lmstudio / "broken.gguf").write_bytes(b"GGUF")
    settings = make_settings(tmp_path, ollama_models=str(root), lmstudio_models=str(tmp_path / "lmstudio"),
                             default_model="tiny:latest")
    with caplog.at_level("INFO"), TestClient(create_app(settings, build_registry(settings))) as client:
        health = client.get("/api/health")
        models = client.get("/api/models")
    assert health.status_code == 200 and models.status_code == 200
    reasons = {r["name"]: r["reason"] for r in health.json()["refused"]}
    assert {"notjson:latest", "missing:latest", "passwd:latest", "badblob:latest", "broken"} <= set(reasons)
    assert "blobs/sha256-" + "3" * 64 in reasons["missing:latest"]
    for text in (health.text, models.text):
        assert str(tmp_path) not in text and os.path.realpath(tmp_path) not in text
    assert str(root) in caplog.text  # the operator's log says where


def test_any_exception_reading_one_manifest_skips_that_entry_only(good_gguf: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """RecursionError and MemoryError ended start-up; whatever one manifest raises now skips that entry only."""
    from checkpoints import gguf_stores

    root = good_store(tmp_path / "ollama", good_gguf)
    for model in ("memory", "recursion"):
        manifest_path(root, model).write_text(f'{{"layers": [], "boom": "{model}"}}')
    original = gguf_stores.parse_json

    def failing(text: str, *args: object) -> object:
        if '"boom": "memory"' in text:
            raise MemoryError
        if '"boom": "recursion"' in text:
            raise RecursionError("maximum recursion depth exceeded")
        return original(text, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(gguf_stores, "parse_json", failing)
    registry = build_registry(make_settings(tmp_path, ollama_models=str(root)))
    assert registry.names() == ["tiny:latest"]
    reasons = refused(registry)
    assert reasons["memory:latest"] == "its manifest cannot be read: MemoryError"
    assert reasons["recursion:latest"] == "its manifest cannot be read: RecursionError"
