"""Tiny seeded models for the browser tests (and a dev server: `python -m tests.browser.models --port 8765`).

- `gpt`: decoder, RoPE, GQA (4 query heads, 2 K/V heads), RMSNorm, Pre-Norm, SwiGLU, 2 layers
- `translator`: encoder-decoder, sinusoidal positions, LayerNorm, Post-Norm, ReLU, 1 + 1 layers
- `bert`: encoder only, learned positions, Post-Norm, no LM head, English-only (meta language)
- `learner`: a decoder saved as a checkpoint (in the server's tmp folder) whose meta has what a
  tiny-gpt v2 run writes: `history` with `natural` induction scores and `bits_per_character`,
  `head_scores` from the random-token probe, `natural_head_scores` per language, and one snapshot

Random weights: the numbers show the mechanics, not learned knowledge.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers

from checkpoints import LoadedModel, save_checkpoint
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
                                            "duplicate-token": 0.0, "induction": 0.0}}],
                            # the coreference probe's list (training.heads), one head labelled
                            "coreference_head_scores": [
                                {"layer": 0, "head": 1, "label": "coreference", "probe": "coreference",
                                 "scores": {"coreference": 0.31, "antecedent": 0.52}}]}),
        "translator": LoadedModel(Transformer(translator).eval(), tr_tok,
                                  {"description": "tiny encoder-decoder (random weights)", "bos_token": "<s>",
                                   "eos_token": "<s>"}),
        "bert": LoadedModel(Transformer(bert).eval(), bert_tok,
                            {"description": "tiny encoder (random weights)", "language": ["en"]}),
        "words": LoadedModel(Transformer(words).eval(), words_tok, {"description": "whole-word tokens (XSS test)"}),
    }


PATTERNS = ("previous-token", "first-token", "self", "duplicate-token", "induction")


def _entry(layer: int, head: int, label: str, probe: str, **scores: float) -> dict[str, object]:
    full = {p: 0.02 for p in PATTERNS} | {k.replace("_", "-"): v for k, v in scores.items()}
    return {"layer": layer, "head": head, "scores": full, "label": label, "probe": probe}


def _heads(probe: str, labelled: dict[tuple[int, int], tuple[str, float]]) -> list[dict[str, object]]:
    """Every head of the learner (2 layers x 4 heads); `labelled`: (layer, head) -> (label, its score)."""
    out = []
    for layer in range(2):
        for head in range(4):
            label, score = labelled.get((layer, head), ("mixed", 0.05))
            key = "induction" if label == "mixed" else label
            out.append(_entry(layer, head, label, probe, **{key.replace("-", "_"): score}))
    return out


def _best(layer: int, head: int, score: float) -> dict[str, object]:
    return {"layer": layer, "head": head, "score": score}


def _history_row(step: int, train: float, val: float, en: float | None, zh: float | None) -> dict[str, object]:
    row: dict[str, object] = {
        "step": step, "tokens_seen": step * 2048, "train_loss": train, "val_loss": val,
        "val_en": round(val - 0.2, 4), "val_zh": round(val + 0.3, 4),
        "prev_token": {"layer": 0, "head": 0, "score": 0.9}, "induction": {"layer": 1, "head": 2, "score": 0.8},
    }
    if en is not None and zh is not None:  # the first evaluation predates the natural probe: no numbers there
        row["natural"] = {
            "en": {"previous-token": _best(0, 0, 0.7), "induction": _best(1, 1, en)},
            "zh": {"previous-token": _best(0, 1, 0.6), "induction": _best(1, 3, zh)},
        }
        row["bits_per_character"] = {"en": round(val / 1.3, 4), "zh": round(val * 2.1, 4)}
    return row


LEARNER_HISTORY = [
    _history_row(10, 7.9, 7.6, None, None),
    _history_row(20, 6.8, 6.5, 0.04, 0.03),
    _history_row(40, 5.6, 5.4, 0.11, 0.07),
    _history_row(60, 4.9, 4.8, 0.35, 0.21),
    _history_row(80, 4.4, 4.5, 0.58, 0.44),
    _history_row(100, 4.1, 4.3, 0.62, 0.48),
]
LEARNER_SNAPSHOT = 40  # the one snapshot the slider offers (then the final weights, step 100)
# the random-token probe says L1H2 is the induction head; real text says L1H1 (English), L1H3 (Chinese)
LEARNER_META: dict[str, object] = {
    "description": "tiny decoder with a training history (random weights)",
    "language": ["en", "zh"],
    "bos_token": "<|bos|>",
    "eos_token": "<|bos|>",
    "training": {"steps": 100, "target_steps": 100, "finished": True},
    "val_loss": 4.3,
    "bits_per_character": {"en": 3.3077, "zh": 9.03},
    "history": LEARNER_HISTORY,
    "head_scores": _heads("random", {(0, 0): ("previous-token", 0.95), (1, 2): ("induction", 0.91)}),
    "natural_head_scores": {
        "en": _heads("natural", {(0, 0): ("previous-token", 0.8), (1, 1): ("induction", 0.62)}),
        "zh": _heads("natural", {(0, 1): ("previous-token", 0.7), (1, 3): ("induction", 0.48)}),
    },
    "natural_best_heads": {
        "en": {"previous-token": _best(0, 0, 0.8), "induction": _best(1, 1, 0.62)},
        "zh": {"previous-token": _best(0, 1, 0.7), "induction": _best(1, 3, 0.48)},
    },
    "probe_sentences": {"en": ["the cat sat on the mat."], "zh": ["我爱北京天安门广场。"]},
    "snapshots": [{"step": LEARNER_SNAPSHOT, "file": "snapshots/step-000040.safetensors", "val_loss": 5.4,
                   "tokens_seen": 81920}],
}


def write_learner(directory: Path) -> Path:
    """Save the `learner` checkpoint (final weights, meta, tokenizer) and its snapshot's weights."""
    tok = CharTokenizer(CHARS, specials=("<|bos|>",))
    cfg = TransformerConfig(architecture="decoder", vocab_size=tok.vocab_size, d_model=32, n_layers=2, n_heads=4,
                            n_ctx=128, pos_encoding="rope", norm="rmsnorm", seed=5, init_std=0.3)
    save_checkpoint(directory, Transformer(cfg).eval(), tok, LEARNER_META)
    early = directory / "early"
    save_checkpoint(early, Transformer(cfg.replace(seed=6)).eval(), tok, {})
    (directory / "snapshots").mkdir(exist_ok=True)
    (early / "model.safetensors").replace(directory / str(LEARNER_META["snapshots"][0]["file"]))  # type: ignore[index]
    return directory


class ServerThread:
    """A real uvicorn server in a daemon thread."""

    def __init__(self, port: int, tmp: Path, extra_models: bool = False) -> None:
        import uvicorn

        from app.catalogue import add_directory
        from app.factory import create_app
        from app.registry import Registry, RegistryError
        from app.settings import Settings

        settings = Settings(load_minilm=False, weights_dir=tmp / "no-weights", default_model="gpt", workers=2,
                            queue_size=16, max_tokens=96, port=port, data_dir=tmp / "data")
        registry = Registry(default="gpt")
        for name, loaded in tiny_models().items():
            registry.add(name, loaded, source="test")
        add_directory(registry, "learner", write_learner(tmp / "learner"), source="test")
        if extra_models:
            weights = Path(__file__).resolve().parents[2] / "model" / "weights"
            for directory in sorted(weights.glob("*/config.json")):
                # a checkpoint being written right now is not this test's concern
                with contextlib.suppress(RegistryError):
                    add_directory(registry, directory.parent.name, directory.parent, source="weights")
        self.registry = registry  # tests may add models before start()
        self.settings = settings  # a second app on the same models (tests/static_site/test_site_in_browser.py)
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
