"""Gemma 4's new stages in the explorer and the NoPE/RoPE lab view, in a real browser, EN and ZH: tiny random models
written by transformers (Gemma4ForCausalLM, SmolLM3ForCausalLM) as Hugging Face directories and opened as a user's
directory is. Each view draws real numbers (finite, not all zero; the NoPE layer's probe flat, the RoPE layer's not)
with no console error; a model without NoPE layers gets the lab's refusal, named, in the page's language.
Cached decoding on a Qwen3.5-shaped hybrid draws its DeltaNet state's work beside the attention's; the explorer's
description of it names its layer kinds, "layer 2 is" / "layers 0, 1 are".
Screenshots at 1280×720 go to test-artifacts/ (docs/images/gemma4-per-layer-inputs.*.png and
docs/images/lab/nope_attention.*.png are copies, the latter of nope_attention_curves.*.png)."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import open_page
from tests.browser.lab_page import choose_model, open_lab

pytest.importorskip("transformers")

TEXTS = {"en": "The cat sat on the mat because it was tired.", "zh": "猫坐在垫子上，因为它累了。"}
# a repeated phrase: the NoPE layer's scores cannot tell its two copies' places apart, the RoPE layer's can
LAB_TEXTS = {"en": "the cat sat, the cat sat", "zh": "猫坐下了，猫坐下了"}
BAD = re.compile(r"⟦|undefined|NaN|\{\w+\}")


def write_models(tmp: Path) -> dict[str, Path]:
    """A Gemma 4 (6 layers: per-layer inputs, layers 4 and 5 attending with layers 2's and 3's K and V) and a
    SmolLM3 (layer 3 NoPE), random; SmolLM3's q and k projections scaled up so its heads do not attend evenly."""
    import torch

    from tests.checkpoints.test_families import save_hf_directory
    from tests.checkpoints.test_gemma4 import tiny_gemma4
    from tests.checkpoints.test_smollm3 import tiny_smollm3

    smollm3 = tiny_smollm3()
    with torch.no_grad():
        for name, param in smollm3.named_parameters():
            if name.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(8.0)
    out = {"gemma4": tmp / "gemma4", "smollm3": tmp / "smollm3"}
    save_hf_directory(tiny_gemma4(), out["gemma4"])
    save_hf_directory(smollm3, out["smollm3"])
    return out


def hybrid() -> Any:
    """A tiny Qwen3.5-shaped hybrid (tests/app/test_qwen35_app.py): DeltaNet layers 0 and 1, gated attention 2."""
    from checkpoints import LoadedModel
    from model.tokenizer import CharTokenizer
    from tests.app.test_qwen35_app import hybrid_model

    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ,", specials=("<s>",))
    return LoadedModel(hybrid_model(tok), tok, {"description": "a tiny Qwen3.5-shaped hybrid", "bos_token": "<s>",
                                                "eos_token": "<s>"})


@pytest.fixture(scope="module")
def new_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from app.catalogue import add_directory
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    tmp = tmp_path_factory.mktemp("gemma4-nope")
    srv = ServerThread(free_port(), tmp)
    for name, directory in write_models(tmp / "weights").items():
        add_directory(srv.registry, name, directory, source="test")
    srv.registry.add("qwen35", hybrid(), source="test")
    srv.start()
    yield srv
    srv.stop()


def plotted(page: Any, where: str) -> list[list[float]]:
    """Every trace's numbers (z of a heatmap, else y) of the charts under `where`, flattened per trace."""
    return page.evaluate("""(where) => [...document.querySelectorAll(`${where} .plot`)].flatMap(el =>
        (el.data || []).map(t => (t.z || t.y || []).flat(2).filter(v => v !== null)))""", where)


def real_numbers(traces: list[list[float]]) -> None:
    values = [v for trace in traces for v in trace]
    assert values and all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)
    assert any(abs(v) > 1e-6 for v in values)


def screenshot(page: Any, path: Path) -> None:
    from PIL import Image

    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    shot.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gemma4_draws_its_per_layer_inputs_and_shared_kv(watched: Any, new_server: Any, artifacts: Path,
                                                         lang: str) -> None:
    page = watched.page
    page.set_default_timeout(60000)
    page.set_viewport_size({"width": 1280, "height": 720})
    for stage, layer in (("kv_shared", 4), ("pli", 1)):
        open_page(page, new_server.url, model="gemma4", text=TEXTS[lang], stage=stage, layer=layer, lang=lang)
        assert page.locator(f"button.stage-item[data-stage='{stage}']").count() == 1, stage
        assert page.locator("#panel .plot .main-svg").count() >= 1, stage
        real_numbers(plotted(page, "#panel"))
        shown = page.inner_text("#panel")
        assert not BAD.search(shown), (stage, shown[:300])
        assert page.locator("#message:not([hidden])").count() == 0, page.inner_text("#message")
    page.evaluate("document.querySelector('#stage').scrollIntoView()")  # the step's title, formula and chart
    screenshot(page, artifacts / f"gemma4-per-layer-inputs.{lang}.png")
    # the 39-token chart is taller than the screen; its colour bar stays at the plot's top, on the screen
    bar, area = page.evaluate("""() => [".colorbar", ".nsewdrag"].map((part) => {
        const box = document.querySelector(`#panel .plot ${part}`).getBoundingClientRect();
        return [box.top, box.bottom]; })""")
    assert area[1] > 720 and area[0] - 2 <= bar[0] and bar[1] <= min(area[1], 720), (bar, area)
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_hybrids_description_names_its_layer_kinds_in_agreement(watched: Any, new_server: Any, artifacts: Path,
                                                                    lang: str) -> None:
    """The hybrid's description says it is not all attention, and its one attention layer (2) is "layer 2 is", its
    DeltaNet layers "layers 0, 1 are" ("层 0、1", the Chinese list mark); a plain decoder keeps the causal
    self-attention line."""
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, new_server.url, model="qwen35", text="the cat sat", lang=lang)
    arch, line = page.inner_text("#model-info p.arch"), page.inner_text("#model-info .hybrid-line")
    assert not BAD.search(arch + line), (arch, line)
    if lang == "en":
        assert arch.startswith("Decoder-only hybrid") and "gated DeltaNet" in arch, arch
        assert "layers 0, 1 are gated DeltaNet, each keeping" in line and "; layer 2 is attention" in line, line
        assert "layers 2 are" not in line
    else:
        assert arch.startswith("仅解码器的混合结构") and "门控 DeltaNet" in arch, arch
        assert "层 0、1 是门控 DeltaNet，每层保存" in line and "；层 2 是带输出门控的注意力，每个 Token" in line, line
        assert "第" not in line + arch and "每层每个" not in line
    screenshot(page, artifacts / f"hybrid_model_info.{lang}.png")
    open_page(page, new_server.url, model="gpt", text="the cat sat", lang=lang)
    assert page.locator("#model-info .hybrid-line").count() == 0
    assert ("causal self-attention" if lang == "en" else "因果自注意力") in page.inner_text("#model-info p.arch")
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_nope_layer_beside_the_rope_layer_in_the_lab(watched: Any, new_server: Any, artifacts: Path,
                                                         lang: str) -> None:
    page = watched.page
    page.set_default_timeout(60000)
    page.set_viewport_size({"width": 1280, "height": 720})
    open_lab(page, new_server.url, model="smollm3", text=LAB_TEXTS[lang], lang=lang, panel="nope_attention")
    section = page.locator("#panel-nope_attention")
    assert section.locator(".lab-error").count() == 0, section.locator(".lab-error").all_inner_texts()
    assert section.locator(".chart-card .plot").count() == 4 and section.locator(".plot .main-svg").count() >= 4
    real_numbers(plotted(page, "#panel-nope_attention"))
    moved = page.evaluate("""() => document.querySelector('#panel-nope_attention [data-key="nope-moved"] .plot')
        .data.slice(0, 2).map(t => t.y)""")
    nope, rope = moved
    assert max(nope) - min(nope) <= 1e-6 * max(map(abs, nope))  # one value at every distance without positions
    assert max(rope) - min(rope) > 1e-2 * max(map(abs, rope))
    shown = section.inner_text()
    assert not BAD.search(shown), shown[:300]
    assert ("NoPE 层 3" if lang == "zh" else "NoPE layer 3") in shown and "第" not in shown
    page.evaluate("document.querySelector('#panel-nope_attention [data-key=\"nope-nope\"]').scrollIntoView()")
    screenshot(page, artifacts / f"nope_attention.{lang}.png")
    page.evaluate("document.querySelector('#panel-nope_attention [data-key=\"nope-distance\"]').scrollIntoView()")
    screenshot(page, artifacts / f"nope_attention_curves.{lang}.png")
    choose_model(page, "gpt")  # no NoPE layer: refused by name, without asking
    refusal = section.locator(".lab-refused")
    assert refusal.count() == 1 and "gpt" in refusal.inner_text()
    assert ("NoPE" in refusal.inner_text()) and section.locator(".plot .main-svg").count() == 0
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cached_decoding_draws_a_hybrids_fixed_state_work(watched: Any, new_server: Any, artifacts: Path,
                                                          lang: str) -> None:
    page = watched.page
    page.set_default_timeout(60000)
    open_lab(page, new_server.url, model="qwen35", text=LAB_TEXTS["en"], lang=lang, panel="cached_decoding",
             **{"cached_decoding.steps": "4"})
    section = page.locator("#panel-cached_decoding")
    assert section.locator(".lab-error, .lab-refused").count() == 0, section.inner_text()[:300]
    assert section.locator(".chart-card .plot").count() == 3
    real_numbers(plotted(page, "#panel-cached_decoding"))
    with_cache, without = page.evaluate(
        """() => document.querySelector('#panel-cached_decoding [data-key="gen-state"] .plot').data.map(t => t.y)""")
    steps = [b - a for a, b in zip(with_cache, with_cache[1:], strict=False)]
    assert len(set(steps)) == 1 and without[-1] > with_cache[-1]  # the same work for every new token
    shown = section.inner_text()
    assert not BAD.search(shown), shown[:300]
    assert "DeltaNet" in shown
    page.evaluate("document.querySelector('#panel-cached_decoding [data-key=\"gen-bytes\"]').scrollIntoView()")
    screenshot(page, artifacts / f"cached_decoding_hybrid.{lang}.png")
    assert watched.errors == []


def test_head_panels_on_a_hybrid_offer_and_open_its_attention_layers_only(watched: Any, new_server: Any) -> None:
    """The hybrid's layers 0 and 1 are gated DeltaNet layers (no heads): a head panel opened on it with the panel's
    default layer (1) shows and asks for its attention layer 2, and offers no other."""
    page = watched.page
    open_lab(page, new_server.url, model="qwen35", text=LAB_TEXTS["en"], lang="en", panel="linear_attention")
    select = "section[data-panel=linear_attention] select[data-field=layer]"
    assert page.eval_on_selector_all(f"{select} option", "os => os.map(o => o.value)") == ["2"]
    assert page.eval_on_selector(select, "s => s.value") == "2"
    assert page.locator("#board-linear_attention .plot").count() > 0
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_experiment_that_refuses_a_hybrid_says_so_by_its_title_and_lists_the_layers(watched: Any, new_server: Any,
                                                                                     lang: str) -> None:
    """The refusal names the experiment as its panel is titled, not by its API name, and lists the DeltaNet layers
    (0, 1) and the attention layer (2) the language's way ("0, 1" / "0、1")."""
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_lab(page, new_server.url, model="qwen35", text=LAB_TEXTS[lang], lang=lang, panel="positions")
    shown = page.inner_text("#panel-positions .lab-error")
    title = page.inner_text("#panel-positions h2")
    assert f"“{title}”" in shown and "“positions”" not in shown, (title, shown)
    if lang == "en":
        assert "its gated DeltaNet layers (0, 1)" in shown and "attention layers (2)" in shown, shown
    else:
        assert "层 0、1 是门控 DeltaNet 层" in shown and "（层 2）" in shown, shown
    assert not BAD.search(shown), shown
    assert [e for e in watched.errors if "status of 422" not in e] == []
