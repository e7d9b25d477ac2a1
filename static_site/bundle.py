"""The page's ES modules as one classic script, for pages opened from file:// (where browsers refuse modules).

Chromium loads no `<script type=module>` and no `import()` from a file:// page (its origin is null), but it
runs a classic `<script src>`. This bundler knows only the import and export forms the page's own modules
use (static/js/**), and refuses any other by name, so a new form fails the build rather than the page:

    import { a, b as c } from "./x.js";   ->  const { a, b: c } = __te.require("dir/x.js");
    import x from "./x.js";               ->  const x = __te.require("dir/x.js").default;
    import * as x from "./x.js";          ->  const x = __te.require("dir/x.js");
    export function f / const / class     ->  the declaration, plus a getter on the module's exports
    export default <expression>           ->  exports.default = <expression>
    import(`./${name}.js`)                ->  __te.load("dir/", `./${name}.js`)  (a Promise, as import() is)

Each module runs once, on its first require, in strict mode, in its own function scope: ES modules' own
evaluation order for a graph without cycles. Imports are copied when the importing module starts, so a
cycle or an `export let` (whose live binding would differ) is refused.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

IMPORT_NAMED = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"([^"]+)";', re.M | re.S)
IMPORT_DEFAULT = re.compile(r'^import\s+([A-Za-z_$][\w$]*)\s+from\s*"([^"]+)";', re.M)
IMPORT_ALL = re.compile(r'^import\s+\*\s+as\s+([A-Za-z_$][\w$]*)\s+from\s*"([^"]+)";', re.M)
EXPORT_DECLARATION = re.compile(r"^export\s+((?:async\s+)?function\*?|class|const)\s+([A-Za-z_$][\w$]*)", re.M)
EXPORT_DEFAULT = re.compile(r"^export\s+default\s+", re.M)
DYNAMIC_IMPORT = re.compile(r"(?<![\w$.])import\(")
LEFT_OVER = re.compile(r"^\s*(import|export)\b", re.M)
NAME = re.compile(r"^[A-Za-z_$][\w$]*$")

RUNTIME = """(function () {
  "use strict";
  const defined = {}; // module id -> its body
  const done = {}; // module id -> its exports, once it ran
  const te = {
    define(id, body) { defined[id] = body; },
    require(id) {
      if (Object.prototype.hasOwnProperty.call(done, id)) return done[id];
      if (!defined[id]) throw new Error("bundle: no module " + id);
      const exports = {};
      done[id] = exports;
      defined[id](exports);
      return exports;
    },
    load(dir, spec) {
      try { return Promise.resolve(te.require(te.resolve(dir, spec))); } catch (error) { return Promise.reject(error); }
    },
    resolve(dir, spec) {
      const parts = (dir + spec).split("/");
      const out = [];
      for (const part of parts) {
        if (part === "..") out.pop();
        else if (part !== "." && part !== "") out.push(part);
      }
      return out.join("/");
    },
  };
  window.__te = te;
})();
"""


class BundleError(ValueError):
    """A module uses a form this bundler does not know, or the graph has a cycle: said by file and line."""


def _resolve(module: str, spec: str) -> str:
    if not spec.startswith("."):
        raise BundleError(f"{module}: only relative imports are bundled, not {spec!r}")
    return posixpath.normpath(posixpath.join(posixpath.dirname(module), spec))


def _names(clause: str, module: str) -> list[tuple[str, str]]:
    """`a, b as c` -> [(a, a), (b, c)]: (exported name, local name)."""
    pairs = []
    for item in (part.strip() for part in clause.split(",")):
        if not item:
            continue
        words = item.split()
        if len(words) == 1 and NAME.match(words[0]):
            pairs.append((words[0], words[0]))
        elif len(words) == 3 and words[1] == "as" and NAME.match(words[0]) and NAME.match(words[2]):
            pairs.append((words[0], words[2]))
        else:
            raise BundleError(f"{module}: cannot bundle the import name {item!r}")
    return pairs


def transform(module: str, source: str) -> tuple[str, list[str]]:
    """One module's text as a classic function body, and the modules it imports (ids relative to static/js)."""
    imports: list[str] = []

    def named(match: re.Match[str]) -> str:
        target = _resolve(module, match.group(2))
        imports.append(target)
        pairs = _names(match.group(1), module)
        fields = ", ".join(name if name == local else f"{name}: {local}" for name, local in pairs)
        return f"const {{ {fields} }} = __te.require({json.dumps(target)});"

    def default(match: re.Match[str]) -> str:
        target = _resolve(module, match.group(2))
        imports.append(target)
        return f"const {match.group(1)} = __te.require({json.dumps(target)}).default;"

    def everything(match: re.Match[str]) -> str:
        target = _resolve(module, match.group(2))
        imports.append(target)
        return f"const {match.group(1)} = __te.require({json.dumps(target)});"

    exported: list[str] = []

    def declaration(match: re.Match[str]) -> str:
        exported.append(match.group(2))
        return f"{match.group(1)} {match.group(2)}"

    text = IMPORT_NAMED.sub(named, source)
    text = IMPORT_ALL.sub(everything, text)
    text = IMPORT_DEFAULT.sub(default, text)
    text = EXPORT_DECLARATION.sub(declaration, text)
    text, defaults = EXPORT_DEFAULT.subn("exports.default = ", text)
    if defaults > 1:
        raise BundleError(f"{module}: more than one export default")
    directory = posixpath.dirname(module)
    text = DYNAMIC_IMPORT.sub(f"__te.load({json.dumps(directory + '/' if directory else '')}, ", text)
    left = LEFT_OVER.search(text)
    if left:
        line = text[: left.start()].count("\n") + 1
        rest = text[left.start():].strip().splitlines()[0]
        raise BundleError(f"{module}:{line}: cannot bundle {rest!r} (import {{...}} / default / * as, export "
                          "function / async function / class / const / default are the known forms)")
    getters = "".join(f"Object.defineProperty(exports, {json.dumps(name)}, {{ enumerable: true, get: () => {name} }});"
                      "\n" for name in exported)
    return getters + text, imports


def module_graph(js_root: Path, entries: Iterable[str]) -> dict[str, tuple[str, list[str]]]:
    """Every module reachable from `entries` (ids relative to js_root): id -> (its body, its imports)."""
    graph: dict[str, tuple[str, list[str]]] = {}
    todo = list(entries)
    while todo:
        module = todo.pop()
        if module in graph:
            continue
        path = js_root / module
        if not path.is_file():
            raise BundleError(f"no module {module} under {js_root}")
        body, imports = transform(module, path.read_text(encoding="utf-8"))
        graph[module] = (body, imports)
        todo.extend(imports)
    _refuse_cycles(graph)
    return graph


def _refuse_cycles(graph: dict[str, tuple[str, list[str]]]) -> None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in graph[node][1]:
            if state.get(target) == 1:
                raise BundleError("import cycle: " + " -> ".join([*path[path.index(target):], target]))
            if target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def bundle(js_root: Path, entry: str, also: Iterable[str] = ()) -> str:
    """One classic script that runs `entry` (and holds `also`: the modules it loads by import(), by name)."""
    graph = module_graph(js_root, [entry, *also])
    parts = [RUNTIME]
    for module in sorted(graph):
        body = graph[module][0]
        parts.append(f'__te.define({json.dumps(module)}, function (exports) {{\n"use strict";\n{body}\n}});\n')
    parts.append(f"__te.require({json.dumps(entry)});\n")
    return "".join(parts)
