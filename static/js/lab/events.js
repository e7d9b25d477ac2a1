// Every control of the lab turns into one go(patch): the input bar, the language button, and the
// panels' fields (data-field, data-kind) and intervention toggles (data-toggle).

import { go } from "./go.js";
import { lab, withToggle } from "./state.js";

const $ = (id) => document.getElementById(id);

function value(el) {
  const kind = el.dataset.kind;
  if (kind === "int") return Math.round(Number(el.value));
  if (kind === "num") return Number(el.value);
  return el.value;
}

export function bindEvents() {
  $("input-form").addEventListener("submit", (event) => {
    event.preventDefault();
    go({ text: $("text").value, model: $("model").value });
  });
  $("model").addEventListener("change", (event) => go({ model: event.target.value, layer: -1, head: 0, maskLayer: 0, maskHead: 0, ablateLayer: 0, flLayer: 0, flHead: 0, flTile: 0, ablPos: -1 }));
  $("lang").addEventListener("click", () => go({ lang: lab.lang === "en" ? "zh" : "en" }));
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
