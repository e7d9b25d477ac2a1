// Which keys each query may see: causal, bidirectional, sliding window, padding and cross masks,
// and the model's pattern when every layer uses that mask (the masks experiment).

import { Tensor } from "../../shared/api.js";
import { draw, fitMargins, heatmap, tokenLabels } from "../../shared/plot.js";
import { HEADS, int, LAYERS } from "../state.js";
import { numberField, range, selectField } from "../ui.js";

const MASKS = ["causal", "bidirectional", "sliding", "padding", "cross"];

export default {
  fields: { window: int(3, "w"), layer: int(0, "ml", LAYERS), head: int(0, "mh", HEADS) },

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, window: v.window, layer: v.layer }),

  controls({ v, say, info }) {
    return [
      numberField("window", v.window, say("masks_window"), { min: 1, max: 64 }),
      selectField("layer", range(info.n_layers), v.layer, say("layer"), "int"),
      selectField("head", range(info.n_heads), v.head, say("head"), "int"),
    ];
  },

  vars(data) {
    return { window: data.window, shorter: data.shorter, n: data.tokens.length, model_mask: data.model_mask, layer: data.layer };
  },

  draw(board, data, ctx) {
    const { say, v } = ctx;
    const source = tokenLabels(data.tokens);
    const target = data.target_tokens ? tokenLabels(data.target_tokens) : source;
    const head = v.head;
    for (const name of MASKS) {
      const entry = data.masks[name];
      const padded = name === "padding" || name === "cross";
      const mask = padded ? entry.mask[1] : entry.mask; // the padded row of the batch: its hidden keys show
      const rows = name === "cross" ? target : source;
      const traces = [heatmap({ z: mask, x: source, y: rows, signed: false, zmin: 0, zmax: 1, showscale: false, annotate: false, valueLabel: say("masks_value") })];
      traces[0].xaxis = "x";
      traces[0].yaxis = "y";
      const note = entry.pattern ? say(`masks_${name}_note`, this.vars(data)) : say("masks_no_cross");
      const plot = board.card(`mask-${name}`, { title: say(`masks_${name}`), className: "half", note });
      const bar = entry.pattern ? fitMargins(plot, { colorbar: [0, 1] }).r : 10; // the pattern's colour bar, right of the second map
      const layout = { height: 300, grid: { rows: 1, columns: 2, pattern: "independent", xgap: 0.08 }, margin: { l: 70, r: bar, t: 30, b: 70 } };
      if (entry.pattern) {
        const tensor = new Tensor(entry.pattern);
        const fixed = padded ? { row: 1, head } : { head };
        const z = tensor.matrix("q_pos", "k_pos", fixed);
        const pattern = heatmap({ z, x: source, y: rows, signed: false, zmin: 0, zmax: 1, annotate: false, valueLabel: say("weight") });
        pattern.xaxis = "x2";
        pattern.yaxis = "y2";
        traces.push(pattern);
      }
      const axes = { type: "category", automargin: true, tickfont: { size: 10 } };
      // both maps have the same rows: their tokens are named once, left of the mask
      Object.assign(layout, { xaxis: axes, yaxis: { ...axes, autorange: "reversed" }, xaxis2: axes, yaxis2: { ...axes, autorange: "reversed", showticklabels: false } });
      draw(plot, traces, layout, `mask_${name}`);
    }
  },
};
