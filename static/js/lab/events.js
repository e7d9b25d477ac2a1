// Every control of the lab turns into one go(patch): the input bar, the language button, the table
// of contents (and Back, and a #panel link), and the panels' fields (data-field, data-kind) and
// intervention toggles (data-toggle).

import { $ } from "../shared/dom.js";
import { initialFields, readURL } from "../shared/page.js";
import { go } from "./navigate.js";
import { pageOrder } from "./panels/index.js";
import { FIELDS, lab, withToggle } from "./state.js";

function value(el) {
  const kind = el.dataset.kind;
  if (kind === "int") return Math.round(Number(el.value));
  if (kind === "num") return Number(el.value);
  return el.value;
}

/** The panel a fragment names (#masks or #panel-masks), or undefined. */
export function panelOfHash(hash) {
  const name = decodeURIComponent(hash.replace(/^#(panel-)?/, ""));
  return pageOrder().includes(name) ? name : undefined;
}

export function bindEvents() {
  $("input-form").addEventListener("submit", (event) => {
    event.preventDefault();
    go({ text: $("text").value, model: $("model").value });
  });
  $("model").addEventListener("change", (event) => go({ model: event.target.value, layer: -1, head: 0, maskLayer: 0, maskHead: 0, ablateLayer: 0, flLayer: 0, flHead: 0, flTile: 0, ablPos: -1 }));
  $("lang").addEventListener("click", () => go({ lang: lab.lang === "en" ? "zh" : "en" }));
  $("toc").addEventListener("click", (event) => {
    const link = event.target.closest("a[data-panel-link]");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return; // a new tab follows the href
    event.preventDefault();
    go({ panel: link.dataset.panelLink });
  });
  window.addEventListener("popstate", () => go({ ...initialFields(FIELDS), ...readURL(FIELDS) }));
  window.addEventListener("hashchange", () => {
    const panel = panelOfHash(location.hash);
    if (panel) go({ panel });
  });
  $("panels").addEventListener("change", (event) => {
    const el = event.target;
    if (el.dataset.toggle) go({ toggles: withToggle(lab, el.dataset.toggle, el.checked) });
    else if (el.dataset.field) {
      const v = value(el);
      if (el.dataset.kind !== "str" && !Number.isFinite(v)) return;
      go({ [el.dataset.field]: v });
    }
  });
  for (const button of document.querySelectorAll(".example")) {
    button.addEventListener("click", () => go({ text: button.dataset.text }));
  }
}
