"""What a class feels: latency and payload of the explorer's first view through the API.

Measures, at 32 tokens on the default model (tiny-gpt when trained, else a random model of
the same shape):

- p50 / p95 of POST /api/trace (the first view) on new texts (uncached) and repeated ones (cached),
  and of a step to another stage of an already traced text;
- payload bytes of the first view as lists and as base64 (f4, f2), raw and gzip-compressed;
- the ratio of the uncached first view to a plain model forward, both for the server's own
  work (trace + slice + serialize, in process) and for the whole HTTP round trip; each phase's
  requests alternate with plain forwards, and its ratio is taken against those forwards.

    python bench/api_latency.py [--model tiny-gpt] [--repeats 40] [--tokens 32]
    python bench/api_latency.py --model smollm2 --repeats 20 --tokens 24   # issue 22's goals, printed beside

For smollm2 (a 30-layer GGUF model, loaded in the background) the goals are issue 22's: the uncached
first view over HTTP <= 1.1x the plain forward, a next stage of a traced text <= 0.1x that first view.

Requests go over loopback HTTP (keep-alive, gzip) to a real uvicorn server in its own process,
started the way `transformer-explorer serve` starts it (`--server thread`: in a thread of this
process, sharing its interpreter lock with the client), so parsing, middleware and sockets are all
included. The client is the standard library's http.client on one kept-alive connection, the
leanest Python client, as a browser's fetch is native code: httpx, measured side by side, adds
about 1 ms of its own per request (`--client httpx` to see it). The plain forward runs with the
torch threads one inference worker of that server uses (`--threads` to change it), so both sides
of the ratio do the same arithmetic the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import json
import os
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import torch
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.answers.trace import build_trace, first_view  # noqa: E402
from app.catalogue import build_registry  # noqa: E402
from app.compression import ApiJSONResponse  # noqa: E402
from app.factory import create_app  # noqa: E402
from app.inference_pool import compute_trace  # noqa: E402
from app.resolve import Resolved  # noqa: E402
from app.schemas import TraceRequest  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.tokenizing import Inputs, encode_text  # noqa: E402
from bench.load import free_port, start_server  # noqa: E402
from checkpoints import LoadedModel  # noqa: E402
from model.config import TransformerConfig  # noqa: E402
from model.tokenizer import CharTokenizer  # noqa: E402
from model.transformer import Transformer  # noqa: E402

GOAL_SMOLLM2_FIRST_VIEW = 1.1  # uncached first view over HTTP / plain forward (issue 22)
GOAL_SMOLLM2_STEP = 0.1  # a next stage of a traced text / the uncached first view
WORDS = ["the", "cat", "sat", "on", "a", "mat", "while", "students", "watched", "every", "attention", "head",
         "moved", "through", "layers", "of", "small", "model", "trained", "stories", "我", "爱", "北京"]


def stand_in() -> LoadedModel:
    """tiny-gpt's shape (4 layers, 128 wide, 4 heads, RoPE, RMSNorm, SwiGLU, vocab 4096), random weights."""
    cfg = TransformerConfig(d_model=128, n_layers=4, n_heads=4, vocab_size=4096, n_ctx=256, pos_encoding="rope",
                            norm="rmsnorm", activation="swiglu", bias=False)
    return LoadedModel(Transformer(cfg).eval(), CharTokenizer(), {"description": "random stand-in for tiny-gpt"})


def text_of(resolved: Resolved, n_tokens: int, rng: random.Random) -> str:
    """A fresh text of exactly n_tokens tokens (fewer only if the tokenizer refuses to split evenly)."""
    text = ""
    while len(encode_text(resolved.loaded, text)) < n_tokens:
        text += (" " if text else "") + rng.choice(WORDS)
    while len(encode_text(resolved.loaded, text)) > n_tokens:
        text = text[:-1]
    return text


class LoopbackServer:
    """uvicorn serving the app on a free loopback port, in a daemon thread; stopped on exit."""

    def __init__(self, app: object) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))  # type: ignore[arg-type]

    def __enter__(self) -> str:
        import threading

        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark server did not start")
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextlib.contextmanager
def server_process(model: str) -> Iterator[str]:
    """`serve` in its own process on a free loopback port (bench.load.start_server), as deployed."""
    port = free_port()
    server = start_server(port, processes=1, smollm2=model == "smollm2")
    try:
        time.sleep(5)  # the server's background warm-up (lazy models, the meta device, the heap) ends first
        deadline = time.monotonic() + 600
        while model not in httpx.get(f"http://127.0.0.1:{port}/api/health").json()["loaded"]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{model} did not load in 10 minutes")
            time.sleep(1)  # a lazy model (smollm2) loads in the background
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


class LeanClient:
    """POST JSON over one kept-alive http.client connection, gzip accepted and decoded, like a browser."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=120)

    def post(self, path: str, payload: dict[str, object]) -> tuple[int, bytes]:
        self.connection.request("POST", path, body=json.dumps(payload),
                                headers={"Content-Type": "application/json", "Accept-Encoding": "gzip"})
        response = self.connection.getresponse()
        body = response.read()
        if response.getheader("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return response.status, body

    def __enter__(self) -> LeanClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.connection.close()


class HttpxClient:
    """The same over httpx (about 1 ms more per request, measured side by side)."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, headers={"Accept-Encoding": "gzip"}, timeout=120)

    def post(self, path: str, payload: dict[str, object]) -> tuple[int, bytes]:
        response = self.client.post(path, json=payload)
        return response.status_code, response.content  # decompressed by httpx

    def __enter__(self) -> HttpxClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1e3


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-gpt")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, help="torch threads here (default: those of one server worker)")
    parser.add_argument("--server", choices=("process", "thread"), default="process",
                        help="the uvicorn server in its own process (as deployed) or in a thread of this one")
    parser.add_argument("--client", choices=("http.client", "httpx"), default="http.client",
                        help="the HTTP client: the standard library's (lean, as a browser) or httpx")
    args = parser.parse_args()
    settings = Settings(load_minilm=False, load_smollm2=args.model == "smollm2", default_model=args.model)
    torch.set_num_threads(args.threads or settings.torch_threads or torch.get_num_threads())

    registry = build_registry(settings)
    if args.model not in registry.names():
        registry.add(args.model, stand_in(), source="bench")
        args.server = "thread"  # a server process could not see the stand-in
        print(f"note: {args.model} is not under model/weights yet; using a random model of its shape")
    resolved = Resolved(args.model, args.model, registry.get(args.model))
    cfg = resolved.cfg
    print(f"model {args.model}: {cfg.n_layers} layers, d_model {cfg.d_model}, {cfg.n_heads} heads, "
          f"vocab {cfg.vocab_size}, {args.tokens} tokens, torch threads {torch.get_num_threads()} (a server "
          f"worker's: {settings.torch_threads}), server in a {args.server}, client {args.client}")
    rng = random.Random(0)
    fill = settings.trace_cache_entries  # new texts that fill the server's trace cache
    texts = [text_of(resolved, args.tokens, rng) for _ in range(args.repeats * 4 + 5 + fill)]

    view = TraceRequest(model=args.model, text=texts[0])
    names = first_view(resolved)
    app = create_app(settings, registry)
    server_work: list[float] = []
    server = server_process(args.model) if args.server == "process" else LoopbackServer(app)
    client_class: type[LeanClient | HttpxClient] = LeanClient if args.client == "http.client" else HttpxClient
    with server as url, client_class(url) as client:
        def first_view_request(text: str, **extra: object) -> bytes:
            status, body = client.post("/api/trace", {"model": args.model, "text": text, **extra})
            assert status == 200, body[:500]
            return body

        def page_first_view(text: str) -> None:
            """What the explorer sends for a new sentence: its tokens, then the opening stage (the token
            ids) as float16 base64 without the next-token table (static/js/navigate.js, panels/tokens.js)."""
            status, body = client.post("/api/tokenize", {"model": args.model, "text": text})
            assert status == 200, body[:500]
            first_view_request(text, stages=["hook_tokens"], top_k=0, encoding="base64", dtype="float16")

        for text in texts[-5:]:  # warm up: imports, allocator, first requests
            first_view_request(text)
        def interleaved(new_texts: list[str], work: list[float] | None = None,
                        request: Callable[[str], object] = first_view_request) -> tuple[list[float], list[float]]:
            """The plain forward of texts[i], the server's own work on it (into `work`, if given) and the HTTP
            first view of new_texts[i] (`request`), alternately, so that the load of a shared machine hits all
            of them alike. Returns the HTTP times and the forward times, which each ratio of this phase is
            taken against (the forwards of another phase ran under another moment's load)."""
            over_http, phase_forward = [], []
            for text, new in zip(texts, new_texts, strict=False):  # texts is the longer list
                tokens = encode_text(resolved.loaded, text)
                ids = torch.tensor([[t.id for t in tokens]])
                with torch.inference_mode():
                    phase_forward.append(timed(lambda ids=ids: resolved.model(ids)))
                if work is not None:
                    work.append(timed(lambda tokens=tokens: ApiJSONResponse(None).render(build_trace(
                        resolved, compute_trace(resolved.model, Inputs(tokens)), view, names))))
                over_http.append(timed(lambda new=new: request(new)))
            return over_http, phase_forward

        uncached, uncached_forward = interleaved(texts[args.repeats : args.repeats * 2], server_work)
        # a server that has served a class: its trace cache is full, so each new trace reuses the memory of
        # an evicted one instead of faulting in fresh pages (~700 page faults per trace while the cache grows)
        for text in texts[args.repeats * 4 + 5 :]:
            first_view_request(text)
        steady, steady_forward = interleaved(texts[args.repeats * 2 : args.repeats * 3])
        page, page_forward = interleaved(texts[args.repeats * 3 : args.repeats * 4], request=page_first_view)
        cached = [timed(lambda: first_view_request(texts[args.repeats])) for _ in range(args.repeats)]
        # stepping: another stage / layer / head of the traced text, each asked for the first time
        kinds = ["hook_pattern", "hook_attn_scores", "hook_scores_raw", "hook_q", "hook_z"]
        steps = [(f"blocks.{layer}.attn.{kind}", head) for kind in kinds for layer in range(cfg.n_layers)
                 for head in range(cfg.n_heads)]
        stepped = [timed(lambda s=s: first_view_request(texts[args.repeats], stages=[s[0]], heads=[s[1]], top_k=0))
                   for s in steps[: args.repeats]]
        payloads = {
            "list": first_view_request(texts[1]),
            "base64 f4": first_view_request(texts[1], encoding="base64"),
            "base64 f2": first_view_request(texts[1], encoding="base64", dtype="float16"),
        }
        stages = json.loads(payloads["list"])["stages"]

    f50, f95 = percentiles(uncached_forward + steady_forward + page_forward)
    w50, w95 = percentiles(server_work)
    u50, u95 = percentiles(uncached)
    v50, v95 = percentiles(steady)
    c50, c95 = percentiles(cached)
    s50, s95 = percentiles(stepped)
    p50, p95 = percentiles(page)
    print(f"first view stages: {', '.join(stages)} (+ top 10 next tokens)")
    print(f"plain forward                     p50 {f50:7.2f} ms  p95 {f95:7.2f} ms")
    print(f"first view, server work (uncached) p50 {w50:7.2f} ms  p95 {w95:7.2f} ms   trace + slice + render")
    print(f"first view HTTP, uncached          p50 {u50:7.2f} ms  p95 {u95:7.2f} ms   trace cache still filling")
    print(f"first view HTTP, uncached, steady  p50 {v50:7.2f} ms  p95 {v95:7.2f} ms   after {fill} more texts")
    print(f"the page's first view, uncached    p50 {p50:7.2f} ms  p95 {p95:7.2f} ms   tokenize + opening stage, f2")
    print(f"first view HTTP, cached            p50 {c50:7.2f} ms  p95 {c95:7.2f} ms")
    print(f"step to a new stage, trace cached  p50 {s50:7.2f} ms  p95 {s95:7.2f} ms")
    for label, body in payloads.items():
        print(f"payload {label:10s} {len(body):7d} bytes   gzip {len(gzip.compress(body)):7d} bytes")
    print(f"ratio cached / uncached (HTTP p50):            {c50 / u50:5.2f}   goal <= 0.2")
    print(f"ratio new-stage step / uncached (HTTP p50):    {s50 / u50:5.2f}   goal <= 0.2")
    # each against the forwards interleaved with it
    uf50, sf50, pf50 = (percentiles(f)[0] for f in (uncached_forward, steady_forward, page_forward))
    print(f"ratio uncached server work / plain forward:    {w50 / uf50:5.2f}   goal <= 2")
    print(f"ratio uncached HTTP / plain forward:           {u50 / uf50:5.2f}   goal <= 1.5 (cache filling)")
    print(f"ratio uncached HTTP / plain forward, steady:   {v50 / sf50:5.2f}   goal <= 1.5 (cache full)")
    print(f"ratio the page's first view / plain forward:  {p50 / pf50:5.2f}   (two requests, cache full)")
    print(f"first-view list payload <= 64 KB:              {len(payloads['list']) <= 64 * 1024}")
    if args.model == "smollm2":  # issue 22: a real 30-layer model
        print(f"smollm2: uncached HTTP / plain forward, steady:  {v50 / sf50:5.2f}   goal <= {GOAL_SMOLLM2_FIRST_VIEW}")
        print(f"smollm2: next stage / uncached first view:       {s50 / v50:5.2f}   goal <= {GOAL_SMOLLM2_STEP}")


if __name__ == "__main__":
    main()
