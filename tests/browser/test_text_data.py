"""The page's words are data (static/text/<lang>.json); these checks need no browser.

- both languages have the same keys, and each text uses the same {placeholders} in both;
- a stage text only uses placeholders the page fills from the model (STAGE_VARS in context.js);
- every step the stepper knows (STEP_KINDS in app/stage_descriptions.py) has its title, short name, formula and
  explanation; every data-i18n word of the HTML shell and every t("key") of the scripts exists;
- no script under static/js is over 400 lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.stage_descriptions import STEP_KINDS
from lessons.languages import LANGS
from model.positional import KINDS

ROOT = Path(__file__).resolve().parents[2]
TEXT_DIR = ROOT / "static" / "text"
JS_DIR = ROOT / "static" / "js"
FIELDS = ("title", "short", "formula", "explain")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def load(lang: str) -> dict[str, Any]:
    return json.loads((TEXT_DIR / f"{lang}.json").read_text(encoding="utf-8"))


def js(path: str) -> str:
    return (JS_DIR / path).read_text(encoding="utf-8")


def object_keys(source: str, name: str) -> set[str]:
    """The keys of `const NAME = { key: ..., ... };` in a script (one entry per line)."""
    block = re.search(rf"(?:const|export const) {name} = \{{\n(.*?)\n\}};", source, re.S)
    assert block, f"{name} not found"
    return set(re.findall(r"^  (\w+):", block.group(1), re.M))


def shared(lang: str) -> dict[str, Any]:
    return json.loads((TEXT_DIR / f"shared.{lang}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def texts() -> dict[str, dict[str, Any]]:
    return {lang: load(lang) for lang in LANGS}


def test_files_are_well_formed(texts: dict[str, dict[str, Any]]) -> None:
    for lang, data in texts.items():
        assert data["language"] == lang
        # models: a model's description, worded from its loader's facts (app/model_words.py)
        assert set(data) == {"language", "html_lang", "separator", "list_separator", "models", "ui", "stages"}
        # a list of layer numbers in the language's own way: "0, 1" / "0、1"
        assert data["list_separator"] == {"en": ", ", "zh": "、"}[lang]
        for section in ("models", "ui", "stages"):
            for key, value in data[section].items():
                assert isinstance(value, str), (lang, key)
                assert "undefined" not in value and "⟦" not in value, (lang, key)
                # braces only as {placeholder}
                assert "{" not in PLACEHOLDER.sub("", value) and "}" not in PLACEHOLDER.sub("", value), (lang, key)


def test_same_keys_and_placeholders_in_every_language(texts: dict[str, dict[str, Any]]) -> None:
    en = texts["en"]
    for lang in LANGS[1:]:
        for section in ("ui", "stages"):
            assert set(texts[lang][section]) == set(en[section]), (lang, section)
            for key, value in en[section].items():
                theirs = texts[lang][section][key]
                assert set(PLACEHOLDER.findall(theirs)) == set(PLACEHOLDER.findall(value)), (lang, key)
                assert bool(theirs) == bool(value), (lang, key)


def test_the_shared_words_are_each_a_shared_modules_in_both_languages_and_no_pages_own() -> None:
    # static/text/shared.<lang>.json: what both pages show (shared/i18n.js joins it to the page's file, and a key
    # in both is a mistake); each key named after the shared module that shows it (interventions_…)
    en, zh = shared("en"), shared("zh")
    assert set(en) == set(zh) == {"language", "html_lang", "separator", "ui"}
    assert (en["language"], zh["language"]) == ("en", "zh")
    assert set(en["ui"]) == set(zh["ui"])
    for key, value in en["ui"].items():
        assert set(PLACEHOLDER.findall(zh["ui"][key])) == set(PLACEHOLDER.findall(value)), key
    modules = tuple(f"{p.stem.split('_')[0]}_" for p in (JS_DIR / "shared").glob("*.js"))
    assert all(key.startswith(modules) for key in en["ui"]), [k for k in en["ui"] if not k.startswith(modules)]
    for own in ("en", "zh", "lab.en", "lab.zh"):
        both = set(json.loads((TEXT_DIR / f"{own}.json").read_text(encoding="utf-8"))["ui"]) & set(en["ui"])
        assert not both, (own, both)
    # the view reads every key it names
    view = js("shared/interventions_view.js")
    named = set(re.findall(r'"(interventions_\w+)"', view))
    assert named and named <= set(en["ui"]), named - set(en["ui"])


def test_stage_placeholders_come_from_the_model(texts: dict[str, dict[str, Any]]) -> None:
    provided = object_keys(js("context.js"), "STAGE_VARS") | object_keys(
        js("params.js"), "PARAM_VARS"
    )  # ...PARAM_VARS is spread into STAGE_VARS
    assert {"d_model", "n_heads", "d_head", "n_layers", "d_mlp", "d_vocab", "n_tokens"} <= provided
    used = {name for data in texts.values() for value in data["stages"].values() for name in PLACEHOLDER.findall(value)}
    assert used <= provided, used - provided
    assert {"d_model", "n_heads", "d_head"} <= used  # the explanations do state the model's numbers


def test_every_stage_has_its_text(texts: dict[str, dict[str, Any]]) -> None:
    stages = set(STEP_KINDS) | {"unknown"}
    keys = set(texts["en"]["stages"])
    choices = js("stage_text.js")
    chosen = {  # stage -> the fields the selection code picks keys for (CHOICES in stage_text.js)
        m.group(1): set(re.findall(r"\b(title|short|formula|explain):", m.group(2)))
        for m in re.finditer(r"^  (\w+): \{(.*?)\n?(?=^  \w+: \{|^\};)", choices, re.M | re.S)
    }
    assert chosen.get("ln1") == {"title", "formula", "explain"}, chosen.get("ln1")
    for stage in sorted(stages):
        for field in FIELDS:
            plain = f"{stage}.{field}"
            assert plain in keys or field in chosen.get(stage, set()), plain
    # every literal key the selection code names exists
    named = set(re.findall(r'"([a-z_]+\.[a-z_]+(?:\.[a-z_]+)?)"', js("stage_text.js")))
    assert named and named <= keys, named - keys
    # and every templated one, for every positional-encoding kind of the registry
    for kind in KINDS:
        assert {f"pos.formula.{kind}", f"pos.explain.{kind}"} <= keys
    for act in ("relu", "gelu", "gelu_tanh", "silu", "gated", "other"):
        assert f"ffn_act.formula.{act}" in keys


def test_every_ui_key_the_page_uses_exists(texts: dict[str, dict[str, Any]]) -> None:
    ui = set(texts["en"]["ui"]) | set(shared("en")["ui"])  # the page loads its file joined to shared.<lang>.json
    html = (ROOT / "templates" / "index.html").read_text(encoding="utf-8")
    used = set(re.findall(r'data-i18n(?:-title)?="([\w-]+)"', html))
    for path in JS_DIR.rglob("*.js"):
        used |= set(re.findall(r'\bt\("([\w-]+)"', path.read_text(encoding="utf-8")))
    used |= {f"pat_{p}" for p in ("previous-token", "first-token", "self", "duplicate-token", "induction",
                                   "coreference")}
    # keys made from a probe ("random", "natural", "coreference"), a language or a series (probes.js, teach.js,
    # progress.js)
    for probe in ("random", "natural", "coreference"):
        used |= {f"probe_short_{probe}", f"head_label_{probe}", f"head_label_other_{probe}"}
    used |= {"lang_name_en", "lang_name_zh", "curve_train_loss", "curve_val_loss"}
    assert used - ui == set()


def test_no_script_over_400_lines() -> None:
    sizes = {str(p.relative_to(JS_DIR)): len(p.read_text(encoding="utf-8").splitlines()) for p in JS_DIR.rglob("*.js")}
    assert sizes and max(sizes.values()) <= 400, {k: v for k, v in sizes.items() if v > 400}


def test_no_mutable_module_state_in_the_page_scripts() -> None:
    """Module-level `let`/`var` would be state outside the one state object (state.js)."""
    for path in JS_DIR.rglob("*.js"):
        assert not re.search(r"^(?:export )?(?:let|var) ", path.read_text(encoding="utf-8"), re.M), path


CJK = "\u4e00-\u9fff"
HALF_WIDTH_COLON = re.compile(rf"[{CJK}（）“”]\s*:|:\s*[{CJK}（“]")  # an ASCII colon touching Chinese
HALF_WIDTH_NUMBERING = re.compile(r"\(\d\)")  # (1) (2): Chinese text numbers with （1）（2）
SPURIOUS_DECIMAL = re.compile(r"1/\{?\w*\}?\.\d|1/\d+\.0+\b")  # "1/4.00"


def chinese_texts() -> list[tuple[str, str, str]]:
    """(file, key, text) of every Chinese text a learner reads."""
    out = []
    for name in ("zh.json", "lab.zh.json", "shared.zh.json"):
        data = json.loads((TEXT_DIR / name).read_text(encoding="utf-8"))
        for section in ("ui", "stages"):
            out += [(name, key, value) for key, value in data.get(section, {}).items()]
    return out


def test_chinese_texts_use_full_width_colons_and_numbering() -> None:
    bad = [(name, key, m.group(0)) for name, key, text in chinese_texts()
           for m in [*HALF_WIDTH_COLON.finditer(text), *HALF_WIDTH_NUMBERING.finditer(text)]]
    assert bad == []


def test_the_punctuation_check_catches_what_it_should() -> None:
    assert HALF_WIDTH_COLON.search("看这里: 热力图") and HALF_WIDTH_COLON.search("minilm: 编码器")
    assert HALF_WIDTH_NUMBERING.search("自注意力分四步：(1) 每个 Token")
    assert not HALF_WIDTH_COLON.search("softmax(QKᵀ/√d_k)·V") and not HALF_WIDTH_COLON.search("RoPE：维度对 {pair}")
    assert not HALF_WIDTH_NUMBERING.search("（1）每个 Token")


def test_chinese_titles_space_mixed_scripts_and_say_ratios_as_whole_numbers() -> None:
    lab = json.loads((TEXT_DIR / "lab.zh.json").read_text(encoding="utf-8"))["ui"]
    assert lab["cached_decoding_title"] == "用 KV Cache 逐步解码"
    # the KV caption's ratio is filled as a whole number when it is one (kv_cache_size.js gqaSaving), never "1/4.00"
    kv = (JS_DIR / "lab" / "panels" / "kv_cache_size.js").read_text(encoding="utf-8")
    assert "Number.isInteger(ratio) ? String(ratio)" in kv
    bad = [(name, key) for name, key, text in chinese_texts()
           if re.search(r"[A-Za-z]\s?[\u4e00-\u9fff]", text) and re.search(r"Cache[\u4e00-\u9fff]", text)]
    assert bad == []


def test_the_kv_caption_compares_one_context() -> None:
    # GQA's saving is only GQA's at one context: the caption names one count of positions, not one per model
    for lang in LANGS:
        note = json.loads((TEXT_DIR / f"lab.{lang}.json").read_text(encoding="utf-8"))["ui"]["kv_cache_size_pub_note"]
        names = set(PLACEHOLDER.findall(note))
        assert "pos" in names and not {"l2_pos", "l3_pos"} & names, (lang, names)
        assert "kv_heads" not in note and "n_ctx" not in note, lang


# a placeholder that may hold one layer or expert, then its verb: "the NoPE layers ({nope_layers}) skip", "layers
# {attention_layers} are" read wrong for one ("layers 3 are attention")
COUNTED = "deltanet_layers|attention_layers|nope_layers|local_layers|global_layers|n_experts|n_experts_used"
COUNTED_VERB = re.compile(rf"\{{({COUNTED})\}}[),]*(?:\s[\w-]+){{0,3}}\s(are|were|skip|use)\b")


def test_english_counts_agree_with_their_verbs(texts: dict[str, dict[str, Any]]) -> None:
    """A sentence that names a model's layers or experts by a placeholder is worded for any count: either count-free
    ("NoPE layers skip this step (in this model: 3)"), or in a singular and a plural key that render.js picks by the
    count (hybrid_line's parts: "layer 2 is attention", "layers 0, 1 are gated DeltaNet")."""
    assert COUNTED_VERB.search("the NoPE layers ({nope_layers}) skip this step")
    assert COUNTED_VERB.search("the {n_experts_used} largest p are each token's weights")
    assert not COUNTED_VERB.search("NoPE layers skip this step (in this model: {nope_layers}), and there q and k are")
    en = texts["en"]
    bad = [key for section in ("ui", "stages") for key, value in en[section].items()
           if COUNTED_VERB.search(value) and not key.endswith("_other")]
    assert bad == []
    for part, names in (("deltanet", "deltanet_layers"), ("attention", "attention_layers")):
        assert en["ui"][f"hybrid_{part}_one"].startswith(f"layer {{{names}}} is "), part
        assert en["ui"][f"hybrid_{part}_other"].startswith(f"layers {{{names}}} are "), part
        for lang in LANGS:  # Chinese has no plural, but counts from 0 as 层 3, never 第 3 层
            assert texts[lang]["ui"][f"hybrid_{part}_one"], (lang, part)
            assert "第" not in texts[lang]["ui"][f"hybrid_{part}_other"], (lang, part)
    picked = set(re.findall(r"`hybrid_\w+_\$\{form\(", js("render.js")))  # the key by its count of layers
    assert {"`hybrid_deltanet_${form(", "`hybrid_attention_${form("} <= picked, picked
