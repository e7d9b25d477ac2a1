// Logit lens: the top next token after every block at every position (the logit_lens experiment).

import { draw, heatmap, tokenLabels } from "../../shared/plot.js";
import { visible } from "../../shared/dom.js";

export default {
  fields: {},

  load: ({ s, ask }) => ask({ model: s.model, text: s.text, k: 5 }),

  controls() {
    return [];
  },

  draw(board, data, c) {
    const { say } = c;
    const rows = data.layers.map((l) => (l === "embed" ? say("logit_lens_embed") : say("logit_lens_after", { layer: l })));
    const z = data.top.map((layer) => layer.map((cell) => cell.probs[0]));
    const text = data.top.map((layer) => layer.map((cell) => visible(cell.texts[0])));
    const last = data.top[data.top.length - 1];
    const settled = last.map((cell, p) => data.top.findIndex((layer) => layer[p].ids[0] === cell.ids[0] && data.top.slice(data.top.indexOf(layer)).every((l) => l[p].ids[0] === cell.ids[0])));
    const early = settled.filter((i) => i >= 0 && i < data.top.length - 1).length;
    const vars = { diff: data.max_diff_last.toExponential(1), early, n: last.length, layers: data.layers.length - 1 };
    const trace = { ...heatmap({ z, x: tokenLabels(data.tokens), y: rows, signed: false, zmin: 0, valueLabel: say("probability") }), text, texttemplate: "%{text}" };
    draw(board.card("lens-grid", { title: say("logit_lens_grid_title"), note: say("logit_lens_grid_note", vars) }), [trace],
      { xaxis: { title: { text: say("logit_lens_position") }, type: "category" }, yaxis: { type: "category", autorange: "reversed" }, height: 120 + 40 * rows.length, margin: { l: 110, r: 20, t: 30, b: 70 } }, "logit_lens");
  },
};
