"""Tiny seeded models for the browser tests (and a dev server: `python -m tests.browser.models --port 8765`).

- `gpt`: decoder, RoPE, GQA (4 query heads, 2 K/V heads), RMSNorm, Pre-Norm, SwiGLU, 2 layers
- `translator`: encoder-decoder, sinusoidal positions, LayerNorm, Post-Norm, ReLU, 1 + 1 layers
- `bert`: encoder only, learned positions, Post-Norm, no LM head, English-only (meta language)

Random weights: the numbers show the mechanics, not learned knowledge.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers

from model.checkpoint import LoadedModel
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer, HubTokenizer
from model.transformer import Transformer

CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,'!?"
    "我爱北京天安门广场。小明把书给了小红，因为她要复习你"
)


XSS_TEXTS = [
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "$\\href{javascript:alert(1)}{x}$",
    "</script><script>alert(1)</script>",
]


def words_tokenizer() -> HubTokenizer:
    """Whole words (split on spaces), so markup-looking words stay in one token and reach the labels."""
    words = ["[UNK]", "<|bos|>"] + sorted({w for text in XSS_TEXTS for w in text.split()} | {"the", "cat", "a", "b"})
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return HubTokenizer(tok, "words")


def tiny_models() -> dict[str, LoadedModel]:
    gpt_tok = CharTokenizer(CHARS, specials=("<|bos|>",))
    gpt = TransformerConfig(architecture="decoder", vocab_size=gpt_tok.vocab_size, d_model=32, n_layers=2, n_heads=4,
                            n_kv_heads=2, n_ctx=128, pos_encoding="rope", norm="rmsnorm", activation="swiglu",
                            bias=False, seed=1, init_std=0.3)
    tr_tok = CharTokenizer(CHARS, specials=("<s>",))
    translator = TransformerConfig(architecture="encoder-decoder", vocab_size=tr_tok.vocab_size, d_model=32,
                                   n_layers=1, n_decoder_layers=1, n_heads=4, n_ctx=128, pos_encoding="sinusoidal",
                                   norm_placement="post", activation="relu", seed=3, init_std=0.3)
    bert_tok = CharTokenizer(CHARS[:68])
    bert = TransformerConfig(architecture="encoder", vocab_size=bert_tok.vocab_size, d_model=32, n_layers=1,
                             n_heads=2, n_ctx=128, pos_encoding="learned", norm_placement="post", final_norm=False,
                             lm_head=False, seed=2, init_std=0.3)
    words_tok = words_tokenizer()
    words = TransformerConfig(architecture="decoder", vocab_size=words_tok.vocab_size, d_model=16, n_layers=1,
                              n_heads=2, n_ctx=64, pos_encoding="alibi", seed=4, init_std=0.3)
    return {
        "gpt": LoadedModel(Transformer(gpt).eval(), gpt_tok,
                           {"description": "tiny decoder (random weights)", "bos_token": "<|bos|>",
                            "eos_token": "<|bos|>", "head_scores": [
                                {"layer": 1, "head": 2, "label": "previous-token",
                                 "scores": {"previous-token": 0.55, "first-token": 0.1, "self": 0.1,
                                            "duplicate-token": 0.0, "induction": 0.0}}]}),
        "translator": LoadedModel(Transformer(translator).eval(), tr_tok,
                                  {"description": "tiny encoder-decoder (random weights)", "bos_token": "<s>",
                                   "eos_token": "<s>"}),
        "bert": LoadedModel(Transformer(bert).eval(), bert_tok,
                            {"description": "tiny encoder (random weights)", "language": ["en"]}),
        "words": LoadedModel(Transformer(words).eval(), words_tok, {"description": "whole-word tokens (XSS test)"}),
    }



class ServerThread:
    """A real uvicorn server in a daemon thread."""

    def __init__(self, port: int, tmp: Path, extra_models: bool = False) -> None:
        import uvicorn

        from app.catalogue import add_directory
        from app.main import create_app
        from app.registry import Registry, RegistryError
        from app.settings import Settings

        settings = Settings(load_minilm=False, weights_dir=tmp / "no-weights", default_model="gpt", workers=2,
                            queue_size=16, max_tokens=96, port=port)
        registry = Registry(default="gpt")
        for name, loaded in tiny_models().items():
            registry.add(name, loaded, source="test")
        if extra_models:
            weights = Path(__file__).resolve().parents[2] / "model" / "weights"
            for directory in sorted(weights.glob("*/config.json")):
                # a checkpoint being written right now is not this test's concern
                with contextlib.suppress(RegistryError):
                    add_directory(registry, directory.parent.name, directory.parent, source="weights")
        self.registry = registry  # tests may add models before start()
        self.app = create_app(settings, registry)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"http://127.0.0.1:{port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--with-weights", action="store_true")
    args = parser.parse_args()
    import tempfile

    server = ServerThread(args.port, Path(tempfile.mkdtemp()), extra_models=args.with_weights).start()
    print(f"serving {server.url}", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        server.stop()
