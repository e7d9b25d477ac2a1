"""checkpoints.base.build_model: the loaded tensors become the parameters (one copy of the weights),
tied names stay one tensor, fixed tables are real, and nothing is left on the meta device."""

from __future__ import annotations

import torch

from checkpoints.base import build_model
from model.config import TransformerConfig
from model.transformer import Transformer, distinct_state_dict, shared_weight_aliases


def _state(cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {name: tensor.clone() for name, tensor in distinct_state_dict(Transformer(cfg)).items()}


def test_weights_are_assigned_not_copied() -> None:
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_mlp=64, n_ctx=16, pos_encoding="rope")
    state = _state(cfg)
    model = build_model(cfg, state)
    params = dict(model.named_parameters())
    for name, tensor in state.items():
        assert params[name].data_ptr() == tensor.data_ptr(), name
    assert not any(t.is_meta for t in [*model.parameters(), *model.buffers()])
    rope = model.stack.blocks[0].attn.angle_table
    assert torch.equal(rope, Transformer(cfg).stack.blocks[0].attn.angle_table)


def test_tied_weights_stay_one_tensor() -> None:
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=1, d_mlp=64, n_ctx=16,
                            tied_embeddings=True, pos_encoding="sinusoidal")
    state = _state(cfg)
    model = build_model(cfg, state)
    aliases = shared_weight_aliases(model)
    assert aliases, "a tied model has an alias"
    for alias, owner in aliases.items():
        assert model.get_parameter(alias) is model.get_parameter(owner)
    reference = Transformer(cfg)
    reference.load_state_dict(state, strict=False)
    tokens = torch.tensor([[1, 2, 3, 4]])
    torch.testing.assert_close(model(tokens), reference.eval()(tokens))
