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
from app.cli import build_parser, main, settings_from
from app.registry import RegistryError
from checkpoints import save_checkpoint
from tests.app.conftest import make_settings, tiny_models
from tests.conftest import free_port

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



def test_readme_run_command_starts_a_server() -> None:
    """README's `make run` ends in `transformer-explorer serve`: that command, with the shipped default model."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "make run" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "$(BIN)/transformer-explorer serve" in makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    script = Path(sys.executable).parent / "transformer-explorer"
    command = [str(script), "serve"] if script.is_file() else [sys.executable, "-m", "app", "serve"]
    port = free_port()
    env = {**os.environ, "TE_LOAD_MINILM": "false"}  # minilm is optional; the shipped weights are not
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
