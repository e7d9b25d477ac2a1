"""The /lab page in a real browser: one panel at a time, reached from the table of contents or a link
(?panel=, an older name, #name, Back); every panel renders on a decoder, an encoder and an encoder-decoder, or
shows the refusal its experiment declares, and in Chinese, without a console error; a layer chosen on a deep
model stays inside a shallower one after a switch; older URLs still open the same view; the page reads
before its script runs and "Computing…" covers nothing; and its text data (no browser needed) is complete.
The two side-by-side panels (interventions, compare): test_lab_side_by_side.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.lab import EXPERIMENTS
from app.lab_panels import LAB_PANELS
from tests.browser.lab_page import (
    FAMILY_MODELS,
    LACKING,
    PANELS,
    PLACEHOLDER,
    ROOT,
    SMALL,
    TOGGLES,
    VARIANT,
    check_panel,
    choose_model,
    idle,
    lab_texts,
    open_lab,
    open_panel,
    shown_panels,
)


def test_lab_text_has_every_key_in_both_languages_with_the_same_placeholders() -> None:
    en, zh = lab_texts("en"), lab_texts("zh")
    assert set(en) == set(zh)
    for key, value in en.items():
        assert set(PLACEHOLDER.findall(value)) == set(PLACEHOLDER.findall(zh[key])), key
    used: set[str] = set()
    for path in (ROOT / "static" / "js" / "lab").rglob("*.js"):
        used |= set(re.findall(r'\bsay\("(\w+)"', path.read_text(encoding="utf-8")))
    html = (ROOT / "templates" / "lab.html").read_text(encoding="utf-8")
    used |= {k for k in re.findall(r'data-lab-i18n="(\w+)"', html)}
    used |= {key for p in LAB_PANELS for key in (p.title_key, p.lead_key)} | {f"interventions_{t}" for t in TOGGLES}
    used |= {f"{e.name}_refused" for e in EXPERIMENTS if e.refuses}
    used |= {f"family_{f.replace('-', '_')}" for f in FAMILY_MODELS}
    assert used - set(en) == set()


@pytest.mark.browser
def test_every_panel_renders_on_every_family_or_shows_its_refusal(watched: Any, server: Any) -> None:
    # one page: each family's model in turn, every panel opened from the table of contents
    page = watched.page
    page.set_default_timeout(90000)
    refuses = {experiment.name: experiment.refuses for experiment in EXPERIMENTS}
    open_lab(page, server.url, model="gpt", text="我爱北京天安门", lang="en", **VARIANT, **SMALL)
    for family, model in FAMILY_MODELS.items():
        choose_model(page, model)
        for panel in PANELS:
            open_panel(page, panel)
            check_panel(page, panel, family in refuses.get(panel, ()) or panel in LACKING)
    assert watched.errors == []


@pytest.mark.browser
def test_every_lab_panel_renders_in_chinese(watched: Any, server: Any) -> None:
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", text="我爱北京天安门", lang="zh", **VARIANT, **SMALL)
    assert page.evaluate("document.documentElement.lang").startswith("zh")
    for panel in PANELS:
        open_panel(page, panel)
        check_panel(page, panel, panel in LACKING)
    assert "为什么要除以" in page.inner_text("#panel-scaling")
    assert "注意力权重不等于重要性" in page.inner_text("#panel-ablation")
    assert watched.errors == []


@pytest.mark.browser
def test_a_layer_chosen_on_a_deeper_model_stays_inside_a_shallower_one(watched: Any, server: Any) -> None:
    # the head-count panel once asked the smaller model for "Layer 1 does not exist" after a switch
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", panel="head_count")
    before = page.get_attribute("#panel-head_count", "data-rendered")
    page.select_option("#controls-head_count select[data-field='layer']", "1")
    page.wait_for_function("(b) => document.querySelector('#panel-head_count').dataset.rendered !== b", arg=before)
    idle(page)
    assert "head_count.layer=1" in page.url
    for model in ("bert", "translator"):  # one layer each
        choose_model(page, model)
        check_panel(page, "head_count", False)
        assert page.input_value("#controls-head_count select[data-field='layer']") == "0"
        assert "head_count.layer" not in page.url  # back at its initial value
    assert watched.errors == []


@pytest.mark.browser
def test_older_links_open_the_same_view(watched: Any, server: Any) -> None:
    # an older panel name, and the short keys links used to carry: written back in today's form
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", panel="flow", afl="1", afh="3", hcl="1")
    check_panel(page, "attention_flow", False)
    assert page.input_value("#controls-attention_flow select[data-field='layer']") == "1"
    assert page.input_value("#controls-attention_flow select[data-field='head']") == "3"
    assert "panel=attention_flow" in page.url and "attention_flow.head=3" in page.url and "afh=" not in page.url
    assert "head_count.layer=1" in page.url  # another panel's field is kept for its link
    page.goto(f"{server.url}/lab?model=gpt&text=abc&lang=en#headcount")
    page.wait_for_selector("body[data-ready='1']")
    idle(page)
    assert shown_panels(page) == ["head_count"]
    assert watched.errors == []


@pytest.mark.browser
def test_a_renamed_experiment_opens_from_its_old_link_with_its_fields(watched: Any, server: Any) -> None:
    # generate is now cached_decoding and kv_cache kv_cache_size: the old name and its old <name>.<key> fields
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", panel="generate",
             **{"generate.steps": "5", "kv_cache.batch": "3"})
    check_panel(page, "cached_decoding", False)
    assert page.input_value("#controls-cached_decoding input[data-field='steps']") == "5"
    assert "panel=cached_decoding" in page.url and "cached_decoding.steps=5" in page.url
    assert "kv_cache_size.batch=3" in page.url and "generate." not in page.url and "kv_cache." not in page.url
    assert watched.errors == []


@pytest.mark.browser
def test_one_panel_at_a_time_from_the_contents_a_link_or_back(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(page, server.url, model="gpt", text="我爱北京天安门", lang="zh", panel="masks")
    assert shown_panels(page) == ["masks"] and "panel=masks" in page.url
    assert page.get_attribute("#toc a[data-panel-link='masks']", "aria-current") == "page"
    # one panel, not a 12,000-pixel page: at 1280 px wide the masks panel is a few screens at most
    page.set_viewport_size({"width": 1280, "height": 720})
    assert page.evaluate("document.documentElement.scrollHeight") < 3000
    # the contents' links carry the model and the sentence (a new tab opens the same experiment)
    href = page.get_attribute("#toc a[data-panel-link='scaling']", "href")
    assert "panel=scaling" in href and "model=gpt" in href and "lang=zh" in href
    open_panel(page, "scaling")
    assert shown_panels(page) == ["scaling"] and "panel=scaling" in page.url
    page.go_back()  # Back: the panel before
    page.wait_for_function("() => !document.getElementById('panel-masks').hidden")
    idle(page)
    assert shown_panels(page) == ["masks"] and "panel=masks" in page.url
    # a fragment names a panel too: #sampling, and the explorer's older #panel-sampling
    for fragment in ("sampling", "panel-sampling"):
        page.goto(f"{server.url}/lab?model=gpt&text=abc&lang=en#{fragment}")
        page.wait_for_selector("body[data-ready='1']")
        idle(page)
        assert shown_panels(page) == ["sampling"] and "panel=sampling" in page.url, fragment
    assert watched.errors == []


@pytest.mark.browser
def test_the_page_reads_before_its_script_and_computing_covers_nothing(browser: Any, watched: Any, server: Any) -> None:
    # without its script (as it reads while the modules load): titles and leads in the page's language
    bare = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 720})
    try:
        page = bare.new_page()
        page.goto(f"{server.url}/lab?lang=zh&panel=masks")
        texts = lab_texts("zh")
        assert page.inner_text("#panel-masks h2") == texts["masks_title"]
        toc = page.eval_on_selector_all("#toc a", "els => els.map(e => e.textContent)")
        assert toc == [texts[p.title_key] for p in LAB_PANELS]
        assert not set(toc) & set(PANELS)
        assert page.locator("#panel-scaling").is_hidden()
    finally:
        bare.close()
    # "Computing…" sits beside Run, clear of the language button and every other control
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_lab(page, server.url, model="gpt", text="abc", lang="en")
    page.evaluate("document.body.classList.add('busy')")
    spinner = page.locator(".lab-spinner").bounding_box()
    assert spinner and spinner["width"] > 0
    hits = page.evaluate("""(s) => [...document.querySelectorAll('button, select, input, a, h1, h2')].filter(e => {
        const r = e.getBoundingClientRect();
        return r.width && r.left < s.x + s.width && s.x < r.right && r.top < s.y + s.height && s.y < r.bottom;
      }).map(e => e.id || e.textContent)""", spinner)
    assert hits == [], hits
    page.evaluate("document.body.classList.remove('busy')")
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_learned_positions_past_n_ctx_say_why_in_the_pages_language(watched: Any, server: Any, lang: str) -> None:
    page = watched.page
    open_lab(page, server.url, model="bert", text="the cat", lang=lang, panel="positions",
             **{"positions.length": "130"})
    status = page.inner_text("#panel-positions .lab-error")
    # said from the model's numbers in the page's words, not the server's English refusal
    assert "128" in status and "0–127" in status and "130" in status
    assert "`length`" not in status and "422" not in status
    if lang == "zh":
        english = status.replace("RoPE", "").replace("ALiBi", "")
        assert "可学习的位置表" in status and not re.search(r"[A-Za-z]{4,}", english)
    assert page.locator("#panel-positions .plot .main-svg").count() >= 4  # the formulas still ran
    # the browser logs the refused request itself; that 422 is the point of this panel
    assert [e for e in watched.errors if "status of 422" not in e] == []
    assert len(watched.errors) == 1


@pytest.mark.browser
def test_a_refusal_in_the_chinese_lab_is_said_in_chinese(watched: Any, server: Any) -> None:
    # a position the sentence does not have: the server answers 422 in English; the Chinese page says it in Chinese
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="zh", panel="ablation",
             **{"ablation.position": "40"})
    shown = page.inner_text("#panel-ablation .lab-error")
    assert shown and re.search(r"[\u4e00-\u9fff]{6}", shown), shown
    assert not re.search(r"[A-Za-z]{4,}", shown), shown  # no English sentence inside the Chinese page
    assert [e for e in watched.errors if "status of 422" not in e] == []


@pytest.mark.browser
@pytest.mark.parametrize("held", ["4096", "8192"])
def test_the_kv_caption_compares_gqa_at_one_context(watched: Any, server: Any, held: str) -> None:
    # Llama-2-7B holds 4096 positions, Llama-3-8B 8192: GQA's own saving (32 → 8 K/V heads) is 4× at one count
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", panel="kv_cache_size",
             **{"kv_cache_size.context": held})
    note = page.inner_text("section[data-key='kv-published']")
    assert "at the same 4096 positions" in note and "4× less" in note, note
    assert "2.00 GiB" in note and "512.00 MiB" in note, note  # 4096 · 2 · 32 layers · (32 | 8) · 128 · 2 bytes
    assert "kv_heads" not in note and "n_ctx" not in note
    assert watched.errors == []


@pytest.mark.browser
def test_the_flash_tile_step_is_url_state(watched: Any, server: Any) -> None:
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", panel="flash", **{"flash.tile": "2"},
             **SMALL)
    title = page.locator("#panel-flash h3").first.inner_text()
    assert title.startswith("Step 3 of"), title
    page.fill("#controls-flash input[data-field='tile']", "0")
    page.dispatch_event("#controls-flash input[data-field='tile']", "change")
    idle(page)
    assert page.locator("#panel-flash h3").first.inner_text().startswith("Step 1 of")
    assert "flash.tile=" not in page.url  # back at its default
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("text", ["the cat sat", "the cat sat on the mat and the dog"])
def test_linear_attention_cells_stay_readable_and_each_measure_has_its_axis(watched: Any, server: Any,
                                                                           text: str) -> None:
    # U10 of teaching review 3: 8 px cells, and a cosine (−1…1) flattened on the axis of an error of up to 18
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_lab(page, server.url, model="gpt", text=text, lang="en", panel="linear_attention", lal=0, lah=0)
    cells = page.evaluate("""() => {
      const p = document.querySelector('#board-linear_attention .plot[data-key=lin-weights]');
      return [...p.querySelectorAll('.nsewdrag')].map((d) => { const r = d.getBoundingClientRect();
        return [r.width / p.data[0].x.length, r.height / p.data[0].y.length]; }); }""")
    assert len(cells) == 2 and all(min(size) >= 17 for size in cells), cells  # both maps, every cell ≥ ~18 px
    axes = page.evaluate("""() => {
      const p = document.querySelector('#board-linear_attention .plot[data-key=lin-outputs]');
      return [p.data.map((t) => t.yaxis || 'y'), p.layout.yaxis.range, p.layout.yaxis2.side,
              Math.min(...p.data[0].y)]; }""")
    assert axes[0] == ["y", "y2"] and axes[2] == "right", axes  # the error on its own axis, on the right
    assert axes[1][1] == 1.05 and axes[1][0] <= min(0, axes[3]) - 0.05 + 1e-9, axes  # the cosine's own scale
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_linear_attention_opens_a_real_deltanet_head_beside_its_toy(watched: Any, server: Any, lang: str) -> None:
    """Issue 43: the shipped tiny-deltanet's head, at the layer and head the URL names, drawn from the answer."""
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat on the mat", lang=lang, panel="linear_attention",
             **{"linear_attention.dn_layer": 2, "linear_attention.dn_head": 1})
    drawn = page.evaluate("""() => {
      const state = document.querySelector('#board-linear_attention .plot[data-key=lin-dn-state]');
      const change = document.querySelector('#board-linear_attention .plot[data-key=lin-dn-change]');
      const title = document.querySelector('#board-linear_attention [data-key=lin-dn] h3');
      return [state.data[0].z.length, state.data[0].z[0].length, change.data.length, change.data[0].y[0],
              title.textContent]; }""")
    assert drawn[:4] == [32, 32, 4, 1], drawn  # S is 32 × 32; change, kept, β, read-out per token; the first writes S
    assert "tiny-deltanet" in drawn[4] and ("层 2、头 1" if lang == "zh" else "layer 2, head 1") in drawn[4], drawn
    assert watched.errors == []

@pytest.mark.browser
def test_batch_shapes_speaks_of_padding_only_where_there_is_padding(watched: Any, server: Any) -> None:
    # teaching review 4, finding 16: "pad positions included" over sentence 1, which had no padding
    page = watched.page
    page.set_default_timeout(90000)
    head = "#board-batch_shapes .chart-card[data-key=bs-pattern]"
    open_lab(page, server.url, model="gpt", text="the cat sat on the mat and the dog ran", lang="en",
             panel="batch_shapes", **{"batch_shapes.other": "the cat"})
    title, note = page.inner_text(f"{head} h3"), page.inner_text(f"{head} .chart-note")
    assert "no padding" in title and "pad positions included" not in title, title
    assert "no pad position" in note and "sentence 2 is padded with" in note, note
    open_lab(page, server.url, model="gpt", text="the cat sat on the mat and the dog ran", lang="en",
             panel="batch_shapes", **{"batch_shapes.other": "the cat", "batch_shapes.sentence": "2"})
    title = page.inner_text(f"{head} h3")
    pads = re.search(r"(\d+) pad positions included", title)
    assert pads and int(pads.group(1)) > 0, title
    assert watched.errors == []


@pytest.mark.browser
def test_the_recurrence_note_says_what_its_own_curve_does(watched: Any, server: Any) -> None:
    # teaching review 4, finding 9: "the gradient decays with distance" under a curve shaped like a U
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", lang="en", panel="recurrence",
             text="The animal didn't cross the street because it was too tired.")
    note = page.inner_text("#board-recurrence .chart-card[data-key=recurrence-influence] .chart-note")
    assert "is a U, not a steady decay" in note and "falls with distance" not in note, note
    assert re.search(r"Averaged over \d+ reference sentences \(dashed line\)", note), note
    assert "the gap grows with distance" not in note
    names = page.evaluate("() => document.querySelector('#board-recurrence .plot[data-key=recurrence-influence]')"
                          ".data.map((t) => t.name)")
    assert names[0].startswith("GRU, mean of") and len(names) == 3, names
    assert watched.errors == []


@pytest.mark.browser
def test_the_embedding_panel_answers_its_title_from_its_numbers(watched: Any, server: Any) -> None:
    # teaching review 4, finding 8: "The embedding is still there" above a cosine of about 0.03 from block 1 on
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", lang="en", panel="embedding_persistence",
             text="The animal didn't cross the street because it was too tired.")
    grid = page.locator("#board-embedding_persistence .plot[data-key=ep-grid]")
    cosines = page.evaluate("() => document.querySelector('#board-embedding_persistence .plot[data-key=ep-grid]')"
                            ".data[0].z.slice(1).map((row) => row.reduce((a, b) => a + b, 0) / row.length)")
    assert grid.count() == 1 and max(cosines) <= 0.2, cosines  # tiny-gpt: the direction is lost at once
    note = page.inner_text("#board-embedding_persistence .chart-card[data-key=ep-grid] .chart-note")
    assert note.startswith("On this model, not as a direction: from block 0 on the mean cosine is never above"), note
    assert f"never above {max(cosines):.2f}" in note, note
    assert "still there" not in page.inner_text("#panel-embedding_persistence h2").lower().replace("still there?", "")
    assert watched.errors == []


@pytest.mark.browser
def test_ffn_patching_says_layer_0_carries_the_word_and_draws_negatives_apart(watched: Any, server: Any) -> None:
    # teaching review 4, finding 7: "Highest 1.00 at L0 … where a fact such as a capital is looked up", and cells
    # below 0 drawn white like "no effect"
    page = watched.page
    page.set_default_timeout(120000)
    open_lab(page, server.url, model="gpt", lang="en", panel="activation_patching",
             **{"activation_patching.clean": "The capital of Spain is", "activation_patching.grid": "all"})
    plot = "#board-activation_patching .plot[data-key=patch-ffn]"
    z, zmin, zmax, scale = page.evaluate(f"""() => {{ const t = document.querySelector('{plot}').data[0];
      return [t.z, t.zmin, t.zmax, t.colorscale]; }}""")
    assert (zmin, zmax) == (-1, 1) and scale[len(scale) // 2][1].lower() == "#f7f7f7", scale  # white at 0
    note = page.inner_text("#board-activation_patching .chart-card[data-key=patch-ffn] .chart-note")
    above = max(max(row) for row in z[1:])
    assert "back — where a fact such as a capital is looked up" not in note
    if max(z[0]) > above:  # the best FFN cell is layer 0's, on the changed word (SmolLM2 and tiny-gpt on France/Italy)
        assert "mostly carries the token itself" in note, note
        assert f"From layer 1 on, the highest cell is {above:.2f}" in note, note
        assert ("brings most of" in note) == (above >= 0.5) and ("even half" in note) == (above < 0.5), note
    else:
        assert "candidate for where a fact" in note and "mostly carries the token itself" not in note, note
    # the panel's own default contrast is the chapter's: France/Italy
    assert page.input_value("#controls-activation_patching input[data-field='corrupted']") == "The capital of Italy is"
    assert watched.errors == []
