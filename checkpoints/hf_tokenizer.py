"""The tokenizer of a Hugging Face directory: tokenizer.json, or the classic vocabulary files."""

from __future__ import annotations

from pathlib import Path

from checkpoints.base import CheckpointError
from model.tokenizer import HubTokenizer


def load_hf_tokenizer(directory: Path, kind: str) -> HubTokenizer:
    """tokenizer.json if present (`kind`: its model, "bpe" or "wordpiece", as the family record says), else the
    classic vocab files (GPT-2 vocab.json + merges.txt, BERT vocab.txt)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    if (directory / "tokenizer.json").is_file():
        return HubTokenizer.from_file(directory / "tokenizer.json", kind)
    if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        bpe = models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
        tok = Tokenizer(bpe)
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return HubTokenizer(tok, "bpe")
    if (directory / "vocab.txt").is_file():
        tok = Tokenizer(models.WordPiece.from_file(str(directory / "vocab.txt"), unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        vocab = tok.get_vocab()
        if "[CLS]" in vocab and "[SEP]" in vocab:
            tok.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
        tok.decoder = decoders.WordPiece()
        return HubTokenizer(tok, "wordpiece")
    raise CheckpointError(f"{directory} has no tokenizer (tokenizer.json, vocab.json + merges.txt, or vocab.txt)")
