// One attention layer on a batch of two sentences, view and transpose step by step, one cell followed (the batch_shapes experiment).

import { h } from "../../shared/dom.js";
import { draw, heatmap, shapeText, tokenLabels } from "../../shared/plot.js";
import { HEADS, int, LAYERS, str } from "../state.js";
import { headControls, numberField, selectField, textField } from "../ui.js";

const DIMS = { batch: "batch", pos: "pos", head: "head", kv_head: "kv_head", d_head: "d_head", "head·d_head": "flat", d_model: "d_model", q_pos: "q_pos", k_pos: "k_pos" };

/** Where the numbers are read: "[1, 4, 3, 0…3]"; in a heads × d_head dimension the followed slice starts at the head. */
function indexText(step, followed) {
  const parts = step.index.map((at, i) => {
    const flat = step.dims[i] === "head·d_head";
    if (at === null) return `0…${followed - 1}`;
    return flat ? `${at}…${at + followed - 1}` : String(at);
  });
  return `[${parts.join(", ")}]`;
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

export default {
  // sentence: 1 or 2; pos: its followed position (-1: its last token); key: the key whose score is followed
  fields: { layer: int(0, "bsl", LAYERS), head: int(0, "bsh", HEADS), other: str("Dogs bark at night."), sentence: int(1), pos: int(-1), key: int(0) },

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, other: v.other, layer: v.layer, head: v.head, sentence: v.sentence, key: v.key, ...(v.pos >= 0 ? { pos: v.pos } : {}) }),

  controls({ v, say, info }) {
    return [
      ...headControls({ v, say, info }),
      textField("other", v.other, say("batch_shapes_other")),
      selectField("sentence", [[1, "1"], [2, "2"]], v.sentence, say("batch_shapes_sentence"), "int"),
      numberField("pos", v.pos, say("batch_shapes_pos"), { min: -1, max: 1024 }),
      numberField("key", v.key, say("batch_shapes_key"), { min: 0, max: 1024 }),
    ];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const word = (dim) => say(`batch_shapes_dim_${DIMS[dim]}`);
    const tokens = data.sentences[data.sentence - 1];
    const vars = {
      model: data.model, layer: data.layer, head: data.head, kv_head: data.kv_head, n_heads: data.n_heads, kv_heads: data.kv_heads,
      group: data.n_heads / data.kv_heads, d_model: data.d_model, d_head: data.d_head, width: data.width,
      n1: data.sentences[0].length, n2: data.sentences[1].length, sentence: data.sentence, pos: data.pos, key: data.key,
      token: tokenLabels(tokens)[data.pos], key_token: tokenLabels(tokens)[data.key], followed: data.followed,
      diff: Math.max(...Object.values(data.model_diffs)).toExponential(1), pad: data.pad_key_weight.toExponential(1),
    };
    const rows = data.steps.map((step, i) => {
      const shown = step.values.map((x) => x.toPrecision(6)).join(", ");
      const check = step.reshape && i > 0 ? (same(step.values, data.steps[i - 1].values) ? say("batch_shapes_same") : say("batch_shapes_differs")) : "";
      return h("tr", {}, [
        h("td", { text: say(`batch_shapes_step_${step.name}`, vars) }),
        h("td", {}, h("code", { text: shapeText(step.dims, step.shape, word) })),
        h("td", {}, h("code", { text: indexText(step, data.followed) })),
        h("td", {}, h("code", { text: shown })),
        h("td", { text: check }),
      ]);
    });
    const head = h("tr", {}, ["batch_shapes_col_step", "batch_shapes_col_shape", "batch_shapes_col_index", "batch_shapes_col_values", "batch_shapes_col_check"].map((k) => h("th", { text: say(k) })));
    const gqa = data.kv_heads < data.n_heads ? "batch_shapes_gqa" : "batch_shapes_mha";
    board.block("bs-table", h("div", {},
      h("h3", { text: say("batch_shapes_table_title", vars) }),
      h("table", { class: "kv-table bs-table" }, h("thead", {}, head), h("tbody", {}, rows)),
      h("p", { class: "lab-note", text: [say("batch_shapes_table_note", vars), say(gqa, vars)].join(" ") }),
    ));
    // the longer sentence has no pad position: its title and note say so, and name the sentence that is padded
    const other = 3 - data.sentence;
    const padVars = { ...vars, pads: data.width - tokens.length, other, other_pads: data.width - data.sentences[other - 1].length };
    const padded = padVars.pads > 0 ? "" : "_unpadded";
    const pad = say("batch_shapes_pad");
    const labels = [...tokenLabels(tokens), ...Array.from({ length: data.width - tokens.length }, (_, i) => `${pad} ${tokens.length + i}`)];
    const z = data.pattern.map((row, q) => (q < tokens.length ? row : row.map(() => null)));
    draw(board.card("bs-pattern", { title: say(`batch_shapes_pattern_title${padded}`, padVars), className: "half", note: say(`batch_shapes_pattern_note${padded}`, padVars) }),
      [heatmap({ z, x: labels, y: labels, signed: false, zmin: 0, zmax: 1, valueLabel: say("weight") })],
      { xaxis: { title: { text: say("batch_shapes_keys") }, type: "category" }, yaxis: { title: { text: say("batch_shapes_queries") }, type: "category", autorange: "reversed" }, height: 380, margin: { l: 110, r: 20, t: 30, b: 110 } },
      "batch_shapes_pattern");
  },
};
