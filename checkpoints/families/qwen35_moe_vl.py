"""Qwen3.5-MoE as it is published (Qwen/Qwen3.5-35B-A3B and up): Hugging Face `qwen3_5_moe`
(Qwen3_5MoeForConditionalGeneration), the text model of checkpoints/families/qwen35_moe.py inside the same
vision-language wrapper as Qwen3.5's (checkpoints/families/qwen35_vl.py): config.json's text_config, the weights
under model.language_model. Only the text is read; the vision tower and the multi-token-prediction head are not
loaded.
"""

from __future__ import annotations

from checkpoints.families.qwen35_moe import HF as TEXT_MODEL
from checkpoints.families.qwen35_vl import HF_FIELDS, text_model
from checkpoints.families.records import HfFamily

HF = HfFamily("qwen3_5_moe", HF_FIELDS, text_model(TEXT_MODEL))
