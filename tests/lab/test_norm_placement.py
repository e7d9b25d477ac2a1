"""Pre-LN against Post-LN: same seed, same numbers; and Xiong et al.'s gradient result at init."""

from __future__ import annotations

import pytest
import torch

from lab.norm_placement import (
    SAMPLE_TEXT,
    NormPlacementSettings,
    compare_norm_placement,
    growth_toward_output,
    run_placement,
)

TEXT = SAMPLE_TEXT.encode() * 4  # never the shared corpus: the tests must not depend on it


def test_deterministic_for_a_seed_and_the_two_differ_only_in_placement() -> None:
    settings = NormPlacementSettings(n_layers=2, d_model=32, seq_len=16, batch=4, steps=4, seed=3)
    first = compare_norm_placement(settings, TEXT)
    assert first == compare_norm_placement(settings, TEXT)
    runs = first["runs"]
    assert isinstance(runs, dict)
    assert len(runs["pre"]["losses"]) == len(runs["post"]["losses"]) == 4
    assert len(runs["pre"]["ffn_out_grad_norms"]) == len(runs["post"]["block_grad_norms"]) == 2
    pre, post = settings.model_config("pre"), settings.model_config("post")
    assert pre.replace(norm_placement="post") == post
    other = compare_norm_placement(
        NormPlacementSettings(n_layers=2, d_model=32, seq_len=16, batch=4, steps=4, seed=4), TEXT
    )
    assert other["runs"] != runs


def test_post_ln_gradients_grow_toward_the_output_and_pre_ln_do_not() -> None:
    """Xiong et al. 2020 at init: Post-LN's FFN gradients rise toward the top layers; Pre-LN's do not."""
    data = torch.tensor(list(TEXT))
    for seed in range(3):
        settings = NormPlacementSettings(n_layers=12, d_model=64, seq_len=64, batch=16, steps=0, seed=seed)
        post, pre = run_placement("post", settings, data), run_placement("pre", settings, data)
        assert post.growth > 1.15, (seed, post.ffn_out_grad_norms)
        assert pre.growth < 0.8, (seed, pre.ffn_out_grad_norms)
        assert post.growth > 2 * pre.growth


def test_growth_is_top_third_over_bottom_third() -> None:
    assert growth_toward_output([1.0, 1.0, 2.0, 2.0, 3.0, 3.0]) == pytest.approx(3.0)
    assert growth_toward_output([2.0, 4.0]) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "change",
    [{"n_layers": 25}, {"d_model": 512}, {"steps": 501}, {"d_model": 30, "n_heads": 4}, {"lr": 0.0}, {"batch": 0}],
)
def test_bad_settings_are_refused(change: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        compare_norm_placement(NormPlacementSettings(**change), TEXT)  # type: ignore[arg-type]
