// Controls and small blocks the lab panels share. A control carries data-field (its panel's own key of
// a field) and data-kind; events.js turns its change into one go({"<panel>.<key>": value}). No state lives here.

import { h } from "../shared/dom.js";
import { detailWords, ownWords } from "../shared/messages.js";
import { attentionLayers } from "../shared/model_menu.js";

export function numberField(field, value, label, { min, max, step = 1, kind = "int" } = {}) {
  return h(
    "label",
    { class: "field inline" },
    h("span", { text: label }),
    h("input", { type: "number", "data-field": field, "data-kind": kind, value: String(value), min, max, step, class: "num" }),
  );
}

export function selectField(field, options, value, label, kind = "str") {
  const select = h(
    "select",
    { "data-field": field, "data-kind": kind },
    options.map(([v, text]) => h("option", { value: String(v), text })),
  );
  select.value = String(value);
  return h("label", { class: "field inline" }, h("span", { text: label }), select);
}

/** A line of text (a sentence of a batch): set on Enter or when it loses focus. No maxlength: the browser would cut
 *  a pasted text silently; the server refuses one over its limit, saying its length and the limit. */
export function textField(field, value, label, { size = 28, maxlength } = {}) {
  return h(
    "label",
    { class: "field inline" },
    h("span", { text: label }),
    h("input", { type: "text", "data-field": field, "data-kind": "str", value: String(value), size, maxlength, spellcheck: "false" }),
  );
}

/** A checkbox for one item of a list field (`field`: the panel's key of the list). */
export function toggle(field, item, on, label) {
  return h(
    "label",
    { class: `toggle${on ? " on" : ""}` },
    h("input", { type: "checkbox", "data-field": field, "data-item": item, checked: on }),
    h("span", { text: label }),
  );
}

export function range(n) {
  return Array.from({ length: n }, (_, i) => [i, String(i)]);
}

/** A panel's failure, shown in the panel itself (the other panels stay). `panel`: its name, whose own label of a
 *  field (<panel>_<field> in lab.<lang>.json) names the field a refusal speaks of. */
export function failure(error, say, texts, panel = "") {
  // the server's messages are English: a refusal the page has words for is said in the page's language
  const label = (field) => (panel && texts && texts.has(`${panel}_${field}`) ? texts.t(`${panel}_${field}`) : null);
  const own = detailWords(error, texts, label)
    || (error && error.code && texts && texts.has(`err_${error.code}`) ? texts.t(`err_${error.code}`) : ownWords(error, texts));
  const detail = own || (error && error.message ? error.message : String(error));
  return h("p", { class: "lab-error", text: say("panel_failed", { detail }) });
}

export function fmt(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (Number.isInteger(value) || Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en-US");
  const text = Number(value).toFixed(digits);
  return /^-0\.?0*$/.test(text) ? text.slice(1) : text; // a change that rounds to zero is 0, not "-0.0000"
}

/**
 * A line or bar chart's layout. The legend sits above the plot, anchored at its bottom edge, so a
 * legend of two rows grows upwards (Plotly widens the top margin for it) and never covers a curve;
 * the axes widen their margins for long tick labels (automargin).
 */
export function lineLayout(xTitle, yTitle, extra = {}) {
  return {
    xaxis: { title: { text: xTitle }, automargin: true, ...(extra.xaxis || {}) },
    yaxis: { title: { text: yTitle }, automargin: true, ...(extra.yaxis || {}) },
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" },
    height: 320,
    margin: { l: 70, r: 70, t: 40, b: 60 },
  };
}

/** The layer a head panel shows and asks for: the field's, or on a hybrid the first attention layer from it on. */
function headLayer(info, layer) {
  const layers = attentionLayers(info);
  return layers.includes(layer) ? layer : (layers.find((i) => i > layer) ?? layers[layers.length - 1] ?? layer);
}

/** The body of a panel that reads one head of the sentence's self-attention (an encoder-decoder's: its encoder). */
export function headBody({ s, info, v }, extra = {}) {
  const body = { model: s.model, text: s.text, layer: headLayer(info, v.layer), head: v.head, ...extra };
  if (info.architecture === "encoder-decoder") body.stack = "encoder";
  return body;
}

/** Its layer and head menus, within the model on screen. */
export function headControls({ v, say, info }) {
  return [
    selectField("layer", attentionLayers(info).map((i) => [i, String(i)]), headLayer(info, v.layer), say("layer"), "int"),
    selectField("head", range(info.n_heads), v.head, say("head"), "int"),
  ];
}
