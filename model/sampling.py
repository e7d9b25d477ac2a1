"""Continue a prompt with a decoder-only model: greedy or sampled (temperature, top-k).

python -m model.sampling model/weights/tiny-gpt "It was a truth" --tokens 40 --temperature 0.8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch

from model.transformer import Transformer


@torch.no_grad()
def generate(
    model: Transformer,
    tokenizer: Any,
    prompt: str,
    max_new_tokens: int = 40,
    temperature: float = 0.0,
    top_k: int | None = 40,
    seed: int = 0,
    bos_token: str | None = "<|endoftext|>",
) -> str:
    """The continuation of `prompt` (without the prompt). temperature 0 is greedy."""
    if model.cfg.architecture != "decoder":
        raise ValueError("generate() needs a decoder-only model")
    ids = [t.id for t in tokenizer.encode(prompt)]
    bos = tokenizer.token_id(bos_token) if bos_token and hasattr(tokenizer, "token_id") else None
    if bos is not None:
        ids = [bos] + ids
    generator = torch.Generator().manual_seed(seed)
    prompt_len = len(ids)
    model.eval()
    for _ in range(max_new_tokens):
        window = torch.tensor([ids[-model.cfg.n_ctx :]], device=model.device)
        logits = model(window)[0, -1].float().cpu()
        if temperature <= 0:
            next_id = int(logits.argmax())
        else:
            logits = logits / temperature
            if top_k:
                cutoff = torch.topk(logits, min(top_k, logits.numel())).values[-1]
                logits = logits.masked_fill(logits < cutoff, float("-inf"))
            next_id = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator))
        if next_id == bos:
            break
        ids.append(next_id)
    return tokenizer.decode(ids[prompt_len:])


def main(argv: list[str] | None = None) -> int:
    from model.checkpoint import load_checkpoint

    parser = argparse.ArgumentParser(prog="python -m model.sampling")
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("prompt")
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-k", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    loaded = load_checkpoint(args.model_dir)
    bos = loaded.meta.get("bos_token")
    print(
        args.prompt
        + generate(
            loaded.model, loaded.tokenizer, args.prompt, args.tokens, args.temperature, args.top_k, args.seed, bos
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
