// Every control of the lab turns into one go(patch): the input bar, the language button, the table
// of contents (and Back, and a #panel link), and the panels' fields. A panel's control names its own
// field (data-field="layer", data-kind; a list's item: data-item) and the section it sits in names the
// panel, so its change sets `<panel>.<key>`.

import { $ } from "../shared/dom.js";
import { initialFields, readURL } from "../shared/page.js";
import { go } from "./navigate.js";
import { panelNamed } from "./panels/index.js";
import { fieldOf, FIELDS, lab, withItem } from "./state.js";

function value(el) {
  const kind = el.dataset.kind;
  if (kind === "int") return Math.round(Number(el.value));
  if (kind === "num") return Number(el.value);
  return el.value;
}

/** The panel a fragment names (#masks or #panel-masks, or an older name), or undefined. */
export function panelOfHash(hash) {
  return panelNamed(decodeURIComponent(hash.replace(/^#(panel-)?/, "")));
}

/** P toggles presentation mode, Escape leaves it (the explorer's keys); never while typing in a field. */
function onKey(event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  const tag = (event.target && event.target.tagName) || "";
  if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || (event.target && event.target.isContentEditable)) return;
  if (event.key === "p" || event.key === "P") {
    event.preventDefault();
    go({ present: !lab.present });
  } else if (event.key === "Escape" && lab.present) go({ present: false });
}

export function bindEvents() {
  $("present").addEventListener("click", () => go({ present: !lab.present }));
  document.addEventListener("keydown", onKey);
  $("input-form").addEventListener("submit", (event) => {
    event.preventDefault();
    go({ text: $("text").value, model: $("model").value });
  });
  // the fields that depend on the model are kept inside the new one by every go() (state.js: clampToModel)
  $("model").addEventListener("change", (event) => go({ model: event.target.value }));
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
    const section = el.closest("[data-panel]");
    const spec = el.dataset.field && section && fieldOf(section.dataset.panel, el.dataset.field);
    if (!spec) return;
    if (spec.kind === "list") {
      go({ [spec.field]: withItem(spec, lab[spec.field], el.dataset.item, el.checked) });
      return;
    }
    const v = value(el);
    if (el.dataset.kind !== "str" && !Number.isFinite(v)) return;
    go({ [spec.field]: v });
  });
  for (const button of document.querySelectorAll(".example")) {
    button.addEventListener("click", () => go({ text: button.dataset.text }));
  }
}
