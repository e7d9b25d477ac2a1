// Each lab panel's module is static/js/lab/panels/<name>.js, named as in the page's one list of panels
// (app/lab_panels.py, which the server renders into templates/lab.html as <section data-panel=name>, in
// page order, an experiment's with where it asks: data-path, data-method, data-refuses, data-aliases).
// Neither the list, the order, the titles nor a path is written here: every panel the page lists is
// imported by its name at start, since each declares its URL fields and the first URL may set any of them.
// A module has `fields` ({key: declaration}, lab/state.js), load(ctx), controls(ctx, data) and
// draw(board, data, ctx), with ctx = {s, info, v (its own fields' values), ask (its experiment), say, models}.

import { api } from "../../shared/api.js";
import { addPanelFields, own } from "../state.js";

const loaded = new Map(); // panel name -> its module's default export

function sections() {
  return [...document.querySelectorAll("#panels > [data-panel]")];
}

/** The names of the panels the page lists, in its order. */
export function pageOrder() {
  return sections().map((el) => el.dataset.panel);
}

/** The panel a link names: a panel's name or an older name of it (?panel=flow), else undefined. */
export function panelNamed(asked) {
  if (!asked) return undefined;
  const found = sections().find((el) => el.dataset.panel === asked || (el.dataset.aliases || "").split(" ").includes(asked));
  return found ? found.dataset.panel : undefined;
}

/** Where panel `name` asks, as the server rendered it: {ask(body), refuses: [family]}; null for a panel
 *  that is no experiment (it reads /api/trace itself). */
export function experimentOf(name) {
  const el = document.getElementById(`panel-${name}`);
  if (!el || !el.dataset.path) return null;
  const { path, method } = el.dataset;
  return { ask: (body) => api.lab(path, method, body), refuses: (el.dataset.refuses || "").split(" ").filter(Boolean) };
}

/** Every panel's module, imported once, its fields joined to the page's state. */
export async function loadPanels() {
  const names = pageOrder().filter((name) => !loaded.has(name));
  const modules = await Promise.all(names.map((name) => import(`./${name}.js`)));
  names.forEach((name, i) => {
    loaded.set(name, modules[i].default);
    const section = document.getElementById(`panel-${name}`);
    const aliases = ((section && section.dataset.aliases) || "").split(" ").filter(Boolean);
    addPanelFields(name, modules[i].default.fields, aliases);
  });
}

/** A panel's module (loadPanels() has imported them all). */
export function panelModule(name) {
  const module = loaded.get(name);
  if (!module) throw new Error(`lab panel ${name} is not loaded`);
  return module;
}

/** What a panel is given: the state, the model, its own fields' values and where its experiment asks. */
export function panelContext(s, name) {
  const texts = s.texts[s.lang];
  const experiment = experimentOf(name);
  return { s, info: s.info, v: own(s, name), ask: experiment && experiment.ask, say: texts && texts.t, list: texts && texts.list, models: s.models };
}
