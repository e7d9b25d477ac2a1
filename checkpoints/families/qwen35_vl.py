"""Qwen3.5 as it is published (Qwen/Qwen3.5-0.8B and up): Hugging Face `qwen3_5` (Qwen3_5ForConditionalGeneration),
the text model of checkpoints/families/qwen35.py inside a vision-language wrapper: config.json's text_config, the
weights under model.language_model. Only the text is read: the vision tower (vision_config, model.visual.*) is not
loaded, and text positions are the same on the three multimodal RoPE axes, so the text's numbers are the text
model's. The multi-token-prediction head (mtp.*) is not part of the next-token logits and is not loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checkpoints.base import CheckpointError, ConfigFields, StateDict, refuse_unimplemented
from checkpoints.families.qwen35 import HF as TEXT_MODEL
from checkpoints.families.records import HfFamily
from checkpoints.hf_common import GENERIC_FIELDS, loader_name
from model.config import TransformerConfig

HF_FIELDS = GENERIC_FIELDS | ConfigFields(
    read=frozenset({"text_config"}),
    # the image and video side: not loaded (a text has none of their tokens)
    inert=frozenset({"vision_config", "image_token_id", "video_token_id", "vision_start_token_id",
                     "vision_end_token_id"}),
    defaults={},
)


def text_model(text_family: HfFamily) -> Callable[[dict[str, Any], StateDict], tuple[TransformerConfig, StateDict]]:
    """The converter of a wrapper around `text_family` (Qwen3.5's, or Qwen3.5-MoE's in qwen35_moe_vl.py)."""

    def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
        """The wrapper's text model: text_config (its every field checked as the text family's are), its weights."""
        loader = loader_name(str(hf_config.get("model_type")))
        text = hf_config.get("text_config")
        if not isinstance(text, dict):
            raise CheckpointError(f"{loader}: config field text_config = {text!r} is not a text model's config")
        text = {**text, "model_type": text_family.model_type}
        if "tie_word_embeddings" in hf_config:  # the wrapper's own setting is what transformers ties by
            text["tie_word_embeddings"] = hf_config["tie_word_embeddings"]
        refuse_unimplemented(text, text_family.fields, f"{loader} (text_config)")
        inner = "model.language_model."
        text_state = {("model." + name[len(inner):] if name.startswith(inner) else name): tensor
                      for name, tensor in state.items() if name.startswith(inner) or name == "lm_head.weight"}
        return text_family.convert(text, text_state)

    return convert_hf


HF = HfFamily("qwen3_5", HF_FIELDS, text_model(TEXT_MODEL))
