"""The bundler turns the page's ES modules into one classic script: each known form, and refusals by name."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from static_site.bundle import BundleError, bundle, transform

JS = Path(__file__).resolve().parents[2] / "static" / "js"


def test_each_import_and_export_form() -> None:
    body, imports = transform("lab/x.js", 'import { a, b as c } from "../shared/y.js";\nimport d from "./z.js";\n'
                                          'import * as e from "./w.js";\nexport function f() { return a + c; }\n'
                                          "export const g = 1;\nexport default { d, e };\n"
                                          "const m = await import(`./${name}.js`);\n")
    assert imports == ["shared/y.js", "lab/w.js", "lab/z.js"]
    assert 'const { a, b: c } = __te.require("shared/y.js");' in body
    assert 'const d = __te.require("lab/z.js").default;' in body
    assert 'const e = __te.require("lab/w.js");' in body
    assert "exports.default = { d, e };" in body
    assert '__te.load("lab/", `./${name}.js`)' in body
    assert 'Object.defineProperty(exports, "f"' in body and 'Object.defineProperty(exports, "g"' in body
    assert "export " not in body and "import " not in body


@pytest.mark.parametrize("source", ['export let x = 1;\n', 'export { a };\n', 'import "./side.js";\n',
                                    'import x from "https://cdn.example/x.js";\n'])
def test_an_unknown_form_is_refused_by_name(source: str) -> None:
    with pytest.raises(BundleError):
        transform("m.js", source)


def test_a_cycle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text('import { b } from "./b.js";\nexport const a = 1;\n')
    (tmp_path / "b.js").write_text('import { a } from "./a.js";\nexport const b = 2;\n')
    with pytest.raises(BundleError, match="cycle"):
        bundle(tmp_path, "a.js")


def test_modules_run_once_in_import_order(tmp_path: Path) -> None:
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed")
    (tmp_path / "log.js").write_text("export const log = [];\n")
    (tmp_path / "a.js").write_text('import { log } from "./log.js";\nlog.push("a");\n'
                                   "export function a() { return 1; }\n")
    (tmp_path / "main.js").write_text('import { log } from "./log.js";\nimport { a } from "./a.js";\n'
                                      'import { a as again } from "./a.js";\nlog.push("main");\n'
                                      'console.log(JSON.stringify([log, a() + again()]));\n')
    script = "globalThis.window = globalThis;\n" + bundle(tmp_path, "main.js")
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == '[["a","main"],2]'


@pytest.mark.parametrize("entry", ["main.js", "lab/main.js"])
def test_the_pages_bundle_and_parse(entry: str, tmp_path: Path) -> None:
    panels = sorted((JS / "lab" / "panels").glob("*.js"))
    also = [f"lab/panels/{p.name}" for p in panels] if entry.startswith("lab") else []
    text = bundle(JS, entry, also)
    node = shutil.which("node")
    if node:
        (tmp_path / "page.js").write_text(text)
        subprocess.run([node, "--check", str(tmp_path / "page.js")], check=True)
    assert "__te.require(" in text
