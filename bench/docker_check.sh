#!/usr/bin/env bash
# Build the Docker image and check that it serves with no network at all (too slow for CI; docs/DEPLOY.md has a run).
#
#   bash bench/docker_check.sh [--from-host] [--no-build] [--base IMAGE] [--tag TAG]
#
# 1. A base image: --base, else python:3.11-slim when Docker has it or can pull it, else a Debian bookworm made here
#    with debootstrap (python3, python3-venv, python3-pip, ca-certificates), imported as local/debian-python.
# 2. --from-host: the build's certificates and wheels from this machine: the CA bundle that `pip config list` names
#    as `cert` into deploy/ca-certificates/, the torch wheel of the Dockerfile's TORCH_VERSION from pip's
#    `find-links` folder into deploy/wheelhouse/ (for a build behind a TLS-inspecting proxy that cannot reach the
#    PyTorch index).
# 3. docker build (skipped with --no-build: the image TAG must exist), tagged TAG and transformer-explorer:latest
#    (the image deploy/compose.yaml runs).
# 4. docker run --network none; the checks run inside the container (nothing can reach it from outside): the
#    start-up time (start to the first answer of /api/health), Docker's own health status, /api/health, a trace of a
#    Chinese sentence, a predict on smollm2 once it has loaded in the background (" Paris" first for "The capital
#    of France is"; on the default model, saying so, when the image has no smollm2), that the server's process is
#    not root and that it can write to neither the app nor its venv.
# 5. The container is removed; prints the build time, the image size and the start-up time.
# Needs a running Docker engine; making the Debian base needs root and debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG=transformer-explorer:check
BASE=""
FROM_HOST=0
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --from-host) FROM_HOST=1 ;;
    --no-build) BUILD=0 ;;
    --base) BASE="$2"; shift ;;
    --tag) TAG="$2"; shift ;;
    *) echo "unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
  shift
done
DEBIAN_BASE=local/debian-python
APP=/srv/transformer-explorer
VENV=/opt/venv
TORCH_VERSION=$(sed -n 's/^ARG TORCH_VERSION=//p' Dockerfile)
NAME="te-check-$$"
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

echo "== docker_check $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, Docker $(docker version -f '{{.Server.Version}}')"

make_debian_base() {
  local root
  root=$(mktemp -d /var/tmp/debian-python.XXXXXX)
  echo "making $DEBIAN_BASE with debootstrap (bookworm, minbase) in $root"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null
  # the package cache and lists are not needed to run, and are 100 MB
  tar -C "$root" --exclude='./var/cache/apt/archives/*.deb' --exclude='./var/lib/apt/lists/*' -c . \
    | docker import -c 'CMD ["/bin/bash"]' - "$DEBIAN_BASE" >/dev/null
  rm -rf "$root"
}

if [ "$BUILD" = 0 ]; then
  BASE="(not built here)"
elif [ -z "$BASE" ]; then
  if have_image python:3.11-slim || timeout 60 docker pull -q python:3.11-slim >/dev/null 2>&1; then
    BASE=python:3.11-slim
  else
    echo "python:3.11-slim is not available (no registry?)"
    have_image "$DEBIAN_BASE" || make_debian_base
    BASE=$DEBIAN_BASE
  fi
fi
echo "base image: $BASE"

if [ "$FROM_HOST" = 1 ]; then
  pip_config=$(python3 -m pip config list 2>/dev/null || true)
  cert=$(printf '%s\n' "$pip_config" | sed -n "s/^[^ ]*\.cert='\(.*\)'$/\1/p" | head -n 1)
  links=$(printf '%s\n' "$pip_config" | sed -n "s/^[^ ]*\.find-links='\(.*\)'$/\1/p" | head -n 1)
  cert=${cert:-/etc/ssl/certs/ca-certificates.crt}
  cp "$cert" deploy/ca-certificates/host-ca-bundle.crt
  echo "deploy/ca-certificates/: $cert"
  for wheel in "${links:-/opt/wheels}"/torch-"$TORCH_VERSION"[-+]*.whl; do
    [ -e "$wheel" ] || { echo "no torch $TORCH_VERSION wheel in ${links:-/opt/wheels}" >&2; exit 1; }
    cp -u "$wheel" deploy/wheelhouse/
    echo "deploy/wheelhouse/: $(basename "$wheel")"
  done
fi

BUILD_S="not built (--no-build)"
if [ "$BUILD" = 1 ]; then
  start=$(now)
  docker build --build-arg BASE_IMAGE="$BASE" -t "$TAG" . > /tmp/docker_check_build.log 2>&1 \
    || { tail -n 40 /tmp/docker_check_build.log; echo "build failed (log: /tmp/docker_check_build.log)" >&2; exit 1; }
  BUILD_S="$(seconds "$start" "$(now)") s"
fi
docker tag "$TAG" transformer-explorer:latest
SIZE_MB=$(( $(docker image inspect -f '{{.Size}}' "$TAG") / 1000000 ))

cleanup() { docker rm -f "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT
start=$(now)
# a health check every 2 s instead of the image's 30 s, so "healthy" is seen as soon as it holds (the same command)
docker run -d --name "$NAME" --network none --health-interval 2s "$TAG" >/dev/null
inside() { docker exec -i "$NAME" "$@"; }
STARTUP_S=""
for _ in $(seq 1 240); do
  if inside python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/api/health', timeout=2)" \
      2>/dev/null; then
    STARTUP_S=$(seconds "$start" "$(now)")
    break
  fi
  [ "$(docker inspect -f '{{.State.Running}}' "$NAME")" = true ] || { docker logs "$NAME" | tail -n 30; exit 1; }
  sleep 0.5
done
[ -n "$STARTUP_S" ] || { docker logs "$NAME" | tail -n 30; echo "no answer from /api/health in 120 s" >&2; exit 1; }
HEALTH=""
for _ in $(seq 1 60); do
  HEALTH=$(docker inspect -f '{{.State.Health.Status}}' "$NAME")
  [ "$HEALTH" = healthy ] && break
  sleep 1
done
HEALTHY_S=$(seconds "$start" "$(now)")

echo "network: $(docker inspect -f '{{.HostConfig.NetworkMode}}' "$NAME"); Docker's health status: $HEALTH"
[ "$HEALTH" = healthy ]

# the API, from inside the container
inside python - <<'PY'
import json, math, time, urllib.request

def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request("http://127.0.0.1:8000" + path, data=data,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)

# smollm2 loads in the background after start-up: wait until it is loaded, or gone from the list (it failed)
start = time.monotonic()
health = call("/api/health")
while "smollm2" in health["models"] and "smollm2" not in health["loaded"] and time.monotonic() - start < 600:
    time.sleep(1)
    health = call("/api/health")
if "smollm2" in health["models"]:
    assert "smollm2" in health["loaded"], "smollm2 not loaded 600 s after the first /api/health answer"
    print(f"smollm2 loaded {time.monotonic() - start:.1f} s after the first /api/health answer")
assert health["status"] == "ok", health
names = [m["name"] for m in call("/api/models")]
print(f"/api/health: {health['status']}, device {health['device']}, torch {health['torch']}; "
      f"{len(names)} models: {', '.join(names)}")
text = "我爱北京天安门广场。"
stage = "blocks.1.attn.hook_pattern"
trace = call("/api/trace", {"model": "tiny-gpt", "text": text, "stages": [stage], "heads": [0]})
tokens = trace["tokens"]
assert "".join(t["text"] for t in tokens if t["end"] > t["start"]) == text, tokens
rows = trace["stages"][stage]["data"][0]  # head 0: [q_pos][k_pos]
assert len(rows) == len(tokens) and all(math.isclose(sum(v or 0 for v in row), 1, abs_tol=2e-3) for row in rows)
print(f"trace of {text}: {len(tokens)} tokens ({' '.join(t['text'] for t in tokens)}); {stage} head 0: "
      f"{len(rows)} rows, each sums to 1")
model = "smollm2" if "smollm2" in names else health["default"]
if model != "smollm2":
    print(f"smollm2 is not registered in this image: predict checked on {model}")
prompt = "The capital of France is"
top = call("/api/predict", {"model": model, "text": prompt, "seed": 0})["top_k"]
probs = [t["prob"] for t in top]
assert probs == sorted(probs, reverse=True) and 0 < probs[0] <= 1, top
print(f"predict on {model}, {prompt!r}: " + ", ".join(f"{t['text']!r} {t['prob']:.3f}" for t in top[:3]))
if model == "smollm2":
    assert top[0]["text"] == " Paris", top[:3]
PY

# the server's process, and what it may write
uid=$(inside sh -c "awk '/^Uid:/ { print \$2 }' /proc/1/status")
echo "server process (pid 1): uid $uid"
[ "$uid" != 0 ]
for dir in "$APP" "$APP/app" "$APP/model/weights" "$APP/static" "$VENV" "$VENV/lib"; do
  if inside sh -c "touch '$dir/.write-check'" 2>/dev/null; then
    echo "FAILED: uid $uid can write to $dir" >&2; exit 1
  fi
done
echo "uid $uid cannot write to $APP, its app/, model/weights/ and static/, nor to $VENV"
docker stop -t 20 "$NAME" >/dev/null
echo "stopped: exit code $(docker inspect -f '{{.State.ExitCode}}' "$NAME")"

echo
echo "== summary"
echo "base image:      $BASE"
echo "build time:      $BUILD_S"
echo "image size:      $SIZE_MB MB ($TAG)"
echo "start-up:        $STARTUP_S s from docker run to the first /api/health answer; Docker reported healthy at $HEALTHY_S s"
