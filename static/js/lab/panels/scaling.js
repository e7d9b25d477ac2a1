// Why ÷√d_k: Var(q·k) grows like d_k, and an unscaled softmax saturates (the scaling experiment).

import { draw } from "../../shared/plot.js";
import { h } from "../../shared/dom.js";
import { int, LAYERS, str } from "../state.js";
import { fmt, lineLayout, selectField } from "../ui.js";

function dks(v) {
  return v.d_k.split(",").map(Number).filter((x) => Number.isInteger(x) && x >= 1 && x <= 1024);
}

/** The layer's divisor as a formula: √d_head, or (√d_head × (layer + 1)) in GPT-2's inverse-layer scaling. */
function divisorText(hd) {
  const root = Math.sqrt(hd.d_head);
  const times = hd.divisor / root;
  return Math.abs(times - 1) < 1e-9 ? `√${hd.d_head}` : `(√${hd.d_head} × ${fmt(times, 0)} = ${fmt(hd.divisor, 2)})`;
}

export default {
  // d_k: the widths of the random vectors; layer: the model's scores measured (older links: the masks' layer)
  fields: { d_k: str("4,8,16,32,64,128,256,512,1024", "dk"), layer: int(0, "ml", LAYERS) },

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, d_k: dks(v), layer: v.layer }),

  controls({ v, say, info }) {
    const layers = Array.from({ length: info.n_layers }, (_, i) => [i, String(i)]);
    return [selectField("layer", layers, v.layer, say("layer"), "int")];
  },

  vars(data) {
    const i = data.d_k.length - 1;
    const at64 = data.d_k.indexOf(64);
    return {
      d_k: data.d_k[i],
      variance: fmt(data.variance[i], 1),
      scaled: fmt(data.scaled_variance[i], 3),
      max_unscaled: fmt(data.max_unscaled[i], 2),
      max_scaled: fmt(data.max_scaled[i], 2),
      var64: at64 >= 0 ? fmt(data.variance[at64], 1) : "–",
      n_keys: data.n_keys,
      samples: data.samples,
    };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const x = data.d_k;
    const log = { type: "log" };
    draw(
      board.card("scaling-var", { title: say("scaling_var_title"), className: "half", note: say("scaling_var_note", this.vars(data)) }),
      [
        { x, y: data.variance, mode: "lines+markers", name: say("scaling_measured_var") },
        { x, y: x, mode: "lines", name: say("scaling_line_d_k"), line: { dash: "dot" } },
        { x, y: data.scaled_variance, mode: "lines+markers", name: say("scaling_scaled_var") },
      ],
      lineLayout("d_k", say("scaling_variance"), { xaxis: log, yaxis: { type: "log" } }),
      "scaling_variance",
    );
    draw(
      board.card("scaling-soft", { title: say("scaling_soft_title", { n_keys: data.n_keys }), className: "half", note: say("scaling_soft_note", this.vars(data)) }),
      [
        { x, y: data.max_unscaled, mode: "lines+markers", name: say("scaling_max_unscaled") },
        { x, y: data.max_scaled, mode: "lines+markers", name: say("scaling_max_scaled") },
        { x, y: data.entropy_unscaled, mode: "lines+markers", name: say("scaling_entropy_unscaled"), yaxis: "y2", line: { dash: "dot" } },
        { x, y: data.entropy_scaled, mode: "lines+markers", name: say("scaling_entropy_scaled"), yaxis: "y2", line: { dash: "dot" } },
      ],
      { ...lineLayout("d_k", say("scaling_max_weight"), { xaxis: log, yaxis: { range: [0, 1.05] } }), yaxis2: { title: { text: say("scaling_entropy") }, overlaying: "y", side: "right", rangemode: "nonnegative" } },
      "scaling_softmax",
    );
    if (!data.heads) return;
    const hd = data.heads;
    const heads = hd.max_scaled.map((_, i) => `${say("head")} ${i}`);
    draw(
      board.card("scaling-heads", {
        title: say("scaling_heads_title", { model: data.model, layer: hd.layer, d_head: hd.d_head }),
        note: say("scaling_heads_note", { var_raw: fmt(hd.var_raw[0], 2), var_scaled: fmt(hd.var_scaled[0], 2), divisor: divisorText(hd) }),
      }),
      [
        { type: "bar", x: heads, y: hd.max_scaled, name: say("scaling_max_scaled") },
        { type: "bar", x: heads, y: hd.max_unscaled, name: say("scaling_max_unscaled") },
        { type: "scatter", mode: "markers", x: heads, y: hd.entropy_scaled, name: say("scaling_entropy_scaled"), yaxis: "y2", marker: { size: 11 } },
        { type: "scatter", mode: "markers", x: heads, y: hd.entropy_unscaled, name: say("scaling_entropy_unscaled"), yaxis: "y2", marker: { size: 11, symbol: "x" } },
      ],
      { ...lineLayout("", say("scaling_max_weight"), { yaxis: { range: [0, 1.05] } }), barmode: "group", yaxis2: { title: { text: say("scaling_entropy") }, overlaying: "y", side: "right", rangemode: "nonnegative" } },
      "scaling_heads",
    );
    board.block("scaling-tokens", h("p", { class: "lab-note", text: say("scaling_model_note") }));
    // the gradient through softmax: ‖∂p/∂s‖ per head (mean over query rows), by autograd on these scores
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ratio = mean(hd.jacobian_scaled) / Math.max(mean(hd.jacobian_unscaled), 1e-12); // how many times less without
    draw(
      board.card("scaling-grad", {
        title: say("scaling_grad_title", { model: data.model, layer: hd.layer }),
        note: say("scaling_grad_note", { scaled: fmt(mean(hd.jacobian_scaled), 3), unscaled: fmt(mean(hd.jacobian_unscaled), 3), ratio: fmt(ratio, 2), divisor: divisorText(hd) }),
      }),
      [
        { type: "bar", x: heads, y: hd.jacobian_scaled, name: say("scaling_grad_scaled") },
        { type: "bar", x: heads, y: hd.jacobian_unscaled, name: say("scaling_grad_unscaled") },
      ],
      { ...lineLayout("", say("scaling_grad_axis"), { yaxis: { rangemode: "tozero" } }), barmode: "group" },
      "scaling_gradient",
    );
  },
};
