"""Transformer Explorer's model package: a from-scratch Transformer that records every stage.

Pure PyTorch; never imports the web stack.
"""

from model.config import TransformerConfig
from model.hooks import HookPoint, Trace
from model.transformer import Transformer

__all__ = ["HookPoint", "Trace", "Transformer", "TransformerConfig"]
