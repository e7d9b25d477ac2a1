"""Continue a prompt with a decoder-only checkpoint: greedy or sampled (temperature, top-k).

python -m training.sample model/weights/tiny-gpt "It was a truth" --tokens 40 --temperature 0.8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from checkpoints import load_checkpoint
from model.generate import generate
from model.transformer import Transformer


def continue_text(
    model: Transformer,
    tokenizer: Any,
    prompt: str,
    max_new_tokens: int = 40,
    temperature: float = 0.0,
    top_k: int | None = 40,
    seed: int = 0,
    bos_token: str | None = "<|endoftext|>",
) -> str:
    """The continuation of `prompt` (without the prompt), BOS first; stops at BOS or the context. T 0 is greedy."""
    if model.cfg.architecture != "decoder":
        raise ValueError("continue_text() needs a decoder-only model")
    ids = [t.id for t in tokenizer.encode(prompt)]
    bos = tokenizer.token_id(bos_token) if bos_token and hasattr(tokenizer, "token_id") else None
    if bos is not None:
        ids = [bos] + ids
    new_ids = generate(
        model, ids, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, seed=seed, stop_id=bos
    )
    return tokenizer.decode(new_ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.sample", description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("prompt")
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-k", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    loaded = load_checkpoint(args.model_dir)
    bos = loaded.meta.get("bos_token")
    continuation = continue_text(
        loaded.model, loaded.tokenizer, args.prompt, args.tokens, args.temperature, args.top_k, args.seed, bos
    )
    print(args.prompt + continuation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
