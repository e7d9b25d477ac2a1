// Logit lens: the top next token after every block at every position (the logit_lens experiment).

import { cellFontSize, draw, heatmap, textWidth, tokenLabels } from "../../shared/plot.js";
import { tokenTexts } from "../../shared/dom.js";
import { str } from "../state.js";
import { selectField } from "../ui.js";

// A deep model's 31 rows do not fit a projector (U4 of teaching review 3: SmolLM2's 30 blocks were 1,540 px,
// and the blocks where the answer forms were off the screen): the last SHOWN blocks come first, and a menu
// beside the chart, named in its note, shows every block.
const SHOWN = 12;

/** The rows shown: indices into data.layers (["embed", 0, 1, …]); the last SHOWN blocks unless `all`. */
export function shownRows(layers, all) {
  const rows = layers.map((_, i) => i);
  return all || layers.length <= SHOWN + 1 ? rows : rows.slice(-SHOWN);
}

// cell text at 12 px or more (review 4, finding 15: 10–11 px on a projector); below that a cell keeps Plotly's own fit
const MIN_CELL_PX = 12;

/** The cells' font size: the heatmaps' (20 / 15 px on a projector), else the largest from there down to 12 px at which
 * the widest top token fits its cell; null when none does (a long sentence's narrow cells: Plotly sizes them). */
export function lensCellSize(el, text, rows, cols, margin) {
  const width = ((el.clientWidth || 900) - margin.l - margin.r - 70) / Math.max(1, cols) - 6; // 70: the colour bar
  const widest = text.flat().reduce((a, t) => (t.length > a.length ? t : a), "");
  for (let size = Math.max(MIN_CELL_PX, cellFontSize(rows)); size >= MIN_CELL_PX; size--) if (textWidth(widest, size) <= width) return size;
  return null;
}

export default {
  fields: { rows: str("last") },

  load: ({ s, ask }) => ask({ model: s.model, text: s.text, k: 5 }),

  controls({ v, say, info }) {
    if (info.n_layers <= SHOWN) return [];
    const options = [["last", say("logit_lens_rows_last", { n: SHOWN })], ["all", say("logit_lens_rows_all", { n: info.n_layers })]];
    return [selectField("rows", options, v.rows === "all" ? "all" : "last", say("logit_lens_rows"))];
  },

  draw(board, data, ctx) {
    const { say, v } = ctx;
    const shown = shownRows(data.layers, v.rows === "all");
    const rows = shown.map((i) => data.layers[i]).map((l) => (l === "embed" ? say("logit_lens_embed") : say("logit_lens_after", { layer: l })));
    const z = shown.map((i) => data.top[i].map((cell) => cell.probs[0]));
    // a byte token reads as the character(s) it spells or can still become, as in the explorer (shared/dom.js)
    const text = shown.map((i) => tokenTexts(data.top[i].map((cell) => ({ text: cell.texts[0] }))));
    const last = data.top[data.top.length - 1];
    const settled = last.map((cell, p) => data.top.findIndex((layer) => layer[p].ids[0] === cell.ids[0] && data.top.slice(data.top.indexOf(layer)).every((l) => l[p].ids[0] === cell.ids[0])));
    const early = settled.filter((i) => i >= 0 && i < data.top.length - 1).length;
    const vars = { diff: data.max_diff_last.toExponential(1), early, n: last.length, layers: data.layers.length - 1 };
    const trace = { ...heatmap({ z, x: tokenLabels(data.tokens), y: rows, signed: false, zmin: 0, valueLabel: say("probability") }), text, texttemplate: "%{text}" };
    const part = shown.length < data.layers.length ? say("logit_lens_rows_note", { from: data.layers[shown[0]], to: data.layers[shown[shown.length - 1]], n: data.layers.length - 1 }) : "";
    const el = board.card("lens-grid", { title: say("logit_lens_grid_title"), note: [part, say("logit_lens_grid_note", vars)].filter(Boolean).join(" ") });
    const margin = { l: 110, r: 20, t: 30, b: 70 };
    const size = lensCellSize(el, text, rows.length, data.tokens.length, margin);
    if (size) trace.textfont = { size };
    draw(el, [trace], { xaxis: { title: { text: say("logit_lens_position") }, type: "category" }, yaxis: { type: "category", autorange: "reversed" }, height: 120 + 36 * rows.length, margin }, "logit_lens");
  },
};
