"""docs/ARCHITECTURE.md's recipes stay true: every file they list exists for every lab experiment, every
positional-encoding kind, every trace stage and every model family, and every text key they name is in both
languages' files. For a lab experiment that is all it takes: its modules, its two tests, its texts, its docs
row, and the browser check that reads the list. For a trace stage: its hook point, its description row, its
step's texts and its panel. For a model family: its module with its records, registered, its docs/MODELS.md
row and a parity test that row names."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import get_args

import pytest

from app.endpoints import ENDPOINTS, EXPLORER
from app.lab import EXPERIMENTS
from app.lab_panels import LAB_PANELS
from app.stage_descriptions import ROWS, STEP_KINDS, hook_of
from checkpoints.families import FAMILIES, GGUF_FAMILIES, HF_FAMILIES
from checkpoints.families.records import GgufFamily, HfFamily
from lessons import question_kinds
from lessons.chapters import chapters
from lessons.questions import QUESTION_KINDS
from model.positional import KINDS

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def recipe(name: str) -> str:
    match = re.search(rf"<!-- recipe: {name} -->(.*?)<!-- end recipe -->", DOC, re.S)
    assert match, f"docs/ARCHITECTURE.md has no recipe {name!r}"
    return match.group(1)


def files_of(text: str) -> list[str]:
    """The paths a recipe names: backticked words with a slash and a file extension."""
    return [w for w in re.findall(r"`([^`\s]+)`", text) if "/" in w and re.search(r"\.(py|js|json|md)$", w)]


def keys_of(text: str) -> list[str]:
    """Text keys a recipe names: backticked words with a placeholder and no slash."""
    return [w for w in re.findall(r"`([^`\s]+)`", text) if "<" in w and "/" not in w]


def fill(word: str, **values: str) -> str:
    for key, value in values.items():
        word = word.replace(f"<{key}>", value)
    return word


def lookup(texts: dict, key: str) -> bool:
    """A key in a text file: flat ("ui.iv_pos_rope" under "ui") or at the top level."""
    head, _, rest = key.partition(".")
    if key in texts:
        return True
    return isinstance(texts.get(head), dict) and rest in texts[head]


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=lambda e: e.name)
def test_the_lab_recipe_lists_every_experiments_files(experiment) -> None:
    text = recipe("lab-experiment")
    files = [fill(f, name=experiment.name) for f in files_of(text)]
    name = experiment.name
    assert {f"lab/{name}.py", f"app/lab/{name}.py", f"static/js/lab/panels/{name}.js", f"tests/lab/test_{name}.py",
            f"tests/app/test_lab_{name}.py", "docs/LAB.md"} <= set(files)
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, missing
    # its app test asks its own route
    assert experiment.route in (ROOT / f"tests/app/test_lab_{experiment.name}.py").read_text(encoding="utf-8")
    # its panel declares its URL fields and asks where the server says, never a path of its own
    panel = (ROOT / f"static/js/lab/panels/{experiment.name}.js").read_text(encoding="utf-8")
    assert "export default {" in panel and "fields:" in panel and "/api/" not in panel
    for lang in ("en", "zh"):
        texts = json.loads((ROOT / "static" / "text" / f"lab.{lang}.json").read_text(encoding="utf-8"))
        keys = [fill(k, name=experiment.name) for k in keys_of(text)]
        wanted = [k for k in keys if experiment.refuses or not k.endswith("_refused")]
        absent = [k for k in wanted if not lookup(texts, k)]
        assert not absent, (lang, absent)


# The lab's texts that belong to no one panel, first in static/text/lab.<lang>.json: the page's own words (its
# template, shared/messages.js, the model menu's group, the families a refusal names) and the words several
# panels show. Every other key is a panel's and starts with the panel's name.
LAB_SHARED_TEXT_KEYS = frozenset({
    # the page
    "page_title", "app_title", "tagline", "to_explorer", "lang_toggle", "model", "text", "run", "examples",
    "loading", "toc_title", "err_generic", "err_empty", "err_down", "err_busy", "err_too_long", "dismiss",
    "panel_failed", "panel_working", "working_elapsed", "err_text_too_short", "pe_group",
    "family_decoder", "family_encoder", "family_encoder_decoder", "refused_group", "refused_why",
    "present", "exit_present",
    # several panels
    "layer", "head", "weight", "probability", "seed",
})


def lab_ui(lang: str) -> dict[str, str]:
    return dict(json.loads((ROOT / "static" / "text" / f"lab.{lang}.json").read_text(encoding="utf-8"))["ui"])


def test_every_lab_text_key_is_a_panels_or_shared() -> None:
    # one name per experiment: a panel's texts start with its name (head_count_rank_title), the page's own and
    # the words several panels share are the one group above, and both languages hold the same keys
    en, zh = lab_ui("en"), lab_ui("zh")
    assert set(en) == set(zh), set(en) ^ set(zh)
    prefixes = tuple(f"{panel.name}_" for panel in LAB_PANELS)  # the experiments' and interventions, compare
    assert {e.name for e in EXPERIMENTS} <= {panel.name for panel in LAB_PANELS}
    stray = [key for key in en if key not in LAB_SHARED_TEXT_KEYS and not key.startswith(prefixes)]
    assert not stray, f"lab text keys that name no panel: {stray}"
    assert set(en) >= LAB_SHARED_TEXT_KEYS, LAB_SHARED_TEXT_KEYS - set(en)


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=lambda e: e.name)
def test_the_lab_docs_have_a_row_for_every_experiment(experiment) -> None:
    table = (ROOT / "docs" / "LAB.md").read_text(encoding="utf-8")
    rows = [r for r in table.splitlines() if r.startswith(f"| {experiment.name} |")]
    assert len(rows) == 1, f"docs/LAB.md has no row `| {experiment.name} | ...`"
    assert f"`{experiment.method} {experiment.route}`" in rows[0], rows[0]


def test_the_browser_check_covers_every_experiment_and_family() -> None:
    # one browser test opens every experiment's panel on each shipped family (no list of names to keep)
    check = (ROOT / "tests" / "browser" / "test_lab.py").read_text(encoding="utf-8")
    assert "for experiment in EXPERIMENTS" in check and "experiment.refuses" in check


@pytest.mark.parametrize("endpoint", EXPLORER, ids=lambda e: e.name)
def test_the_explorer_recipe_lists_every_endpoints_files(endpoint) -> None:
    # an endpoint's module is its plan's: app/answers/<module>.py, beside app/schemas/<module>.py
    module = endpoint.plan.__module__.rpartition(".")[2]
    assert endpoint.plan.__module__ == f"app.answers.{module}", endpoint.plan.__module__
    files = [fill(f, module=module) for f in files_of(recipe("explorer-endpoint"))]
    assert {f"app/answers/{module}.py", f"app/schemas/{module}.py", "app/endpoints.py"} <= set(files)
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, missing
    assert endpoint in vars(importlib.import_module(endpoint.plan.__module__)).values(), "its record ends its module"
    plan = endpoint.plan.__name__
    assert plan in ("plan", f"plan_{endpoint.name}"), plan
    # its models are its concept's (a request of none, or a model by name alone, is a shared input)
    response = get_args(endpoint.response)[0] if get_args(endpoint.response) else endpoint.response
    assert response.__module__ == f"app.schemas.{module}", response
    assert endpoint.request.__module__ in (f"app.schemas.{module}", "app.schemas.inputs"), endpoint.request
    # a test under tests/app asks its route
    route = endpoint.route.split("{")[0]
    assert any(route in path.read_text(encoding="utf-8") for path in (ROOT / "tests" / "app").glob("test_*.py"))


def test_every_endpoint_has_a_name_of_its_own() -> None:
    # the name is its route's (its OpenAPI operation id) and the first part of its answers' cache key
    names = [e.name for e in ENDPOINTS]
    assert len(set(names)) == len(names), names
    routes = [(e.method, e.route) for e in ENDPOINTS]
    assert len(set(routes)) == len(routes), routes


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_positional_recipe_lists_every_kinds_files(kind: str) -> None:
    text = recipe("positional-encoding")
    files = files_of(text)
    assert set(files) == {"model/positional.py", "static/text/en.json", "static/text/zh.json"}  # one class, its texts
    assert all((ROOT / f).is_file() for f in files)
    if KINDS[kind].where == "scores":  # a bias kind's texts in the scale stage
        text += recipe("positional-encoding-bias")
    for lang in ("en", "zh"):
        texts = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))
        absent = [k for k in (fill(k, kind=kind) for k in keys_of(text)) if not lookup(texts, k)]
        assert not absent, (lang, absent)


# ---------------------------------------------------------------- a trace stage

STEP_FIELDS = ("title", "short", "formula", "explain")


def model_hooks() -> set[str]:
    """Every hook point model/ declares: `self.hook_<hook> = HookPoint(...)`."""
    return {m.group(1) for p in (ROOT / "model").glob("*.py")
            for m in re.finditer(r"self\.hook_(\w+) = HookPoint\(", p.read_text(encoding="utf-8"))}


def chosen_fields() -> dict[str, set[str]]:
    """step -> the fields static/js/stage_text.js picks per model (CHOICES) instead of one plain key."""
    choices = (ROOT / "static" / "js" / "stage_text.js").read_text(encoding="utf-8")
    return {m.group(1): set(re.findall(r"\b(title|short|formula|explain):", m.group(2)))
            for m in re.finditer(r"^  (\w+): \{(.*?)\n?(?=^  \w+: \{|^\};)", choices, re.M | re.S)}


def test_every_hook_point_has_its_description_row() -> None:
    # a HookPoint without a row is a stage the page would not know (describe() raises Undescribed for it);
    # a row without a HookPoint describes nothing
    described = {hook_of(row) for row in ROWS}
    assert model_hooks() == described, {"no row": model_hooks() - described, "no hook": described - model_hooks()}


@pytest.mark.parametrize("step", sorted(STEP_KINDS))
def test_the_stage_recipe_lists_every_steps_files_and_texts(step: str) -> None:
    kind = STEP_KINDS[step]
    text = recipe("trace-stage")
    files = [fill(f, kind=kind) for f in files_of(text)]
    assert {"model/layers.py", "model/hooks.py", "app/stage_descriptions.py", "static/text/en.json",
            "static/text/zh.json", f"static/js/panels/{kind}.js"} <= set(files), files
    assert all((ROOT / f).is_file() for f in files), [f for f in files if not (ROOT / f).is_file()]
    # its panel is a module the page knows by the kind's name
    panels = (ROOT / "static" / "js" / "panels" / "index.js").read_text(encoding="utf-8")
    assert f'import {kind} from "./{kind}.js";' in panels
    # its texts in both languages: each field a plain key, or picked per model by stage_text.js
    chosen = chosen_fields().get(step, set())
    for lang in ("en", "zh"):
        stages = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["stages"]
        absent = [f"stages.{step}.{field}" for field in STEP_FIELDS if f"{step}.{field}" not in stages
                  and field not in chosen]
        assert not absent, (lang, absent)


# ---------------------------------------------------------------- model families (checkpoints/families/)

MODELS_DOC = (ROOT / "docs" / "MODELS.md").read_text(encoding="utf-8")


def family_records(module: object) -> list[HfFamily | GgufFamily]:
    return [record for record in (getattr(module, "HF", None), getattr(module, "GGUF", None)) if record is not None]


def record_name(record: HfFamily | GgufFamily) -> str:
    return record.model_type if isinstance(record, HfFamily) else record.arch


def names_the_family(text: str, family: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(family)}(?![A-Za-z0-9])", text) is not None


def test_every_family_module_is_registered() -> None:
    # a module in checkpoints/families/ that FAMILIES lacks is a family the loaders never see
    modules = {p.stem for p in (ROOT / "checkpoints" / "families").glob("*.py")} - {"__init__", "records"}
    assert modules == set(FAMILIES), modules ^ set(FAMILIES)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_family_recipe_lists_every_familys_files(family: str) -> None:
    files = [fill(f, family=family) for f in files_of(recipe("model-family"))]
    assert {f"checkpoints/families/{family}.py", "checkpoints/families/__init__.py", "docs/MODELS.md"} <= set(files)
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, missing
    # its record: at least one, each the one its registry serves
    records = family_records(FAMILIES[family])
    assert records, f"checkpoints/families/{family}.py holds no record (HF = HfFamily(...) or GGUF = GgufFamily(...))"
    for record in records:
        registry: dict = HF_FAMILIES if isinstance(record, HfFamily) else GGUF_FAMILIES
        assert registry.get(record_name(record)) is record, (family, record_name(record))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_has_its_docs_row_and_parity_test(family: str) -> None:
    rows = [r for r in MODELS_DOC.splitlines() if r.startswith(f"| {family} |")]
    assert len(rows) == 1, f"docs/MODELS.md has no row `| {family} | ...` in 'The families, one row each'"
    for record in family_records(FAMILIES[family]):
        assert f"`{record_name(record)}`" in rows[0], (family, record_name(record))
    tests = re.findall(r"`(tests/[^`]+\.py)`", rows[0])
    assert tests, f"the row of {family} names no parity test"
    texts = []
    for test in tests:
        assert (ROOT / test).is_file(), test
        texts.append((ROOT / test).read_text(encoding="utf-8"))
        assert "transformers" in texts[-1], f"{test} does not compare with transformers"
    assert any(names_the_family(text, family) for text in texts), f"no parity test of {family} names it"


# a loader that compares a family's name (arch == "qwen2", model_type in (...)) instead of reading its record;
# looking a name up in a registry (`arch not in GGUF_FAMILIES`) is what the records are for
FAMILY_BRANCH = re.compile(r"\b(arch|architecture|model_type)\b\s*(==|!=|\bin\b|\bnot in\b)(?!\s*(GGUF|HF)_FAMILIES)")


def test_no_loader_branches_on_a_family_name() -> None:
    branches = []
    for path in sorted((ROOT / "checkpoints").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FAMILY_BRANCH.search(line.split("#")[0]):
                branches.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not branches, branches


@pytest.mark.parametrize("kind", list(QUESTION_KINDS))
def test_the_question_recipe_lists_every_kinds_files_and_texts(kind: str) -> None:
    text = recipe("question-kind")
    files = files_of(text)
    assert {"lessons/question_kinds.py", "lessons/questions.py", "lessons/chapters.json",
            "tests/app/test_lesson_questions.py", "tests/lessons/test_question_kinds.py"} <= set(files)
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, missing
    assert getattr(question_kinds, kind) is QUESTION_KINDS[kind], "its function, under its own name"
    for lang in ("en", "zh"):
        texts = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))
        keys = [fill(k, kind=kind) for k in keys_of(text) if "<value>" not in k and "<pattern>" not in k]
        assert f"ui.question_{kind}" in keys and f"ui.question_{kind}_why" in keys
        absent = [k for k in keys if not lookup(texts, k)]
        assert not absent, (lang, absent)
    # a chapter asks it, so tests/app/test_lesson_questions.py checks it on real numbers
    assert any(q["kind"] == kind for c in chapters() for q in c.in_lang("en").questions), kind
