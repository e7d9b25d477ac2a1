// Attention weights are not what flows: one head's weights beside ‖a_ij · v_j W_O^h‖, what each key adds to
// each position (the attention_flow experiment). Every number shown comes from the answer.

import { categoryAxis, draw, fitCellText, fitMargins, heatmap, rowsHeight, tokenLabels } from "../../shared/plot.js";
import { h, tokenTexts } from "../../shared/dom.js";
import { HEADS, int, LAYERS } from "../state.js";
import { fmt, headBody, headControls, lineLayout } from "../ui.js";

const HIDDEN = "#c9ced6"; // the plot's background: cells the mask hides are left out and show it

function extreme(values, better) {
  return values.reduce((best, v, i) => (better(v, values[best]) ? i : best), 0);
}

export default {
  fields: { layer: int(0, "afl", LAYERS), head: int(0, "afh", HEADS) },

  load: (ctx) => ctx.ask(headBody(ctx)),
  controls: headControls,

  draw(board, data, ctx) {
    const { say } = ctx;
    const sep = ctx.s.texts[ctx.s.lang].separator; // between sentences: " " in English, "" in Chinese
    const labels = tokenLabels(data.tokens);
    const n = data.tokens.length;
    const word = (i) => tokenTexts(data.tokens)[i];
    const norms = data.value_norms;
    const short = extreme(norms, (a, b) => a < b);
    const long = extreme(norms, (a, b) => a > b);
    const vars = {
      layer: data.layer, head: data.head, n_heads: data.n_heads, kv_head: data.kv_head, n,
      differ: data.rows_differ, rows: data.rows_read, rho: fmt(data.mean_rank_correlation, 2),
      first: word(0), first_norm: fmt(norms[0], 2), first_weight: fmt(data.key_mean_weight[0], 2), first_share: fmt(data.key_mean_share[0], 2),
      short: word(short), short_norm: fmt(norms[short], 2), long: word(long), long_norm: fmt(norms[long], 2),
      diff: data.identity.max_abs_diff.toExponential(1), scale: fmt(data.identity.max_abs_output, 2),
      bias: data.identity.out_bias ? " + b_O" : "",
    };
    const masked = data.weights.some((row) => row.includes(null)); // a mask hides some keys: grey cells
    const query = say("attention_flow_query");
    const key = say("attention_flow_key");
    const height = rowsHeight(n, n <= 12 ? 34 : 22, 300);
    const maps = [
      ["flow-weights", data.weights, say("attention_flow_weights_title", vars), [say("attention_flow_weights_note", vars), masked ? say("attention_flow_hidden") : ""].filter(Boolean).join(sep),
        `${query}: %{y}<br>${key}: %{x}<br>${say("attention_flow_weight")} = %{z:.4f}<extra></extra>`, null],
      ["flow-moved", data.flow_shares, say("attention_flow_moved_title", vars), say("attention_flow_moved_note", vars),
        `${query}: %{y}<br>${key}: %{x}<br>${say("attention_flow_share")} = %{z:.4f}<br>${say("attention_flow_norm")} = %{customdata[0]:.4f}<br>${say("attention_flow_weight")} = %{customdata[1]:.4f}<extra></extra>`,
        data.flow_norms.map((row, i) => row.map((v, j) => [v, data.weights[i][j]]))],
    ];
    for (const [cardKey, z, title, note, hovertemplate, customdata] of maps) {
      const plot = board.card(cardKey, { title, className: "half", note });
      const trace = heatmap({ z, x: labels, y: labels, signed: false, zmin: 0, zmax: 1, hovertemplate, customdata: customdata || undefined });
      const xaxis = categoryAxis(key, { tickangle: n > 8 ? -45 : 0, automargin: false });
      const yaxis = categoryAxis(query, { autorange: "reversed", automargin: false });
      const margin = fitMargins(plot, { y: labels, x: labels, xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [0, 1] });
      if (!fitCellText(plot, trace, margin, height)) board.card(cardKey, { title, className: "half", note: [note, say("attention_flow_cells_hidden")].join(sep) });
      draw(plot, [trace], { height, margin, plot_bgcolor: HIDDEN, xaxis, yaxis }, cardKey.replace("-", "_"));
    }
    draw(board.card("flow-values", { title: say("attention_flow_values_title"), className: "half", note: say("attention_flow_values_note", vars) }), [{
      type: "bar", x: labels, y: norms, name: say("attention_flow_value_norm"),
      marker: { color: norms.map((_, i) => (i === 0 ? "#b2302b" : "#4a90c8")) },
      hovertemplate: `%{x}<br>${say("attention_flow_value_norm")} = %{y:.4f}<extra></extra>`,
    }], lineLayout(key, say("attention_flow_value_norm"), { xaxis: { type: "category", tickangle: n > 8 ? -45 : 0 } }), "flow_value_norms");
    const head = h("tr", {}, ["query", "top_weight", "top_flow", "same", "rho"].map((k) => h("th", { text: say(`attention_flow_col_${k}`) })));
    const plain = (i) => (i >= 0 ? `${i}·${word(i)}` : "–");
    const body = data.rows.map((r, i) => h("tr", {}, [
      plain(i), plain(r.top_weight), plain(r.top_flow), r.top_weight === r.top_flow ? say("attention_flow_same") : say("attention_flow_differ"),
      r.rank_correlation === null ? "–" : r.rank_correlation.toFixed(2),
    ].map((v) => h("td", { text: v }))));
    board.block("flow-rows", h("div", {},
      h("h3", { text: say("attention_flow_rows_title", vars) }),
      h("p", { class: "lab-note", text: say("attention_flow_rows_note", vars) }),
      h("table", { class: "kv-table" }, h("thead", {}, head), h("tbody", {}, body))), "half");
    board.block("flow-identity", h("p", { class: "lab-note flow-identity", text: say("attention_flow_identity", vars) }));
  },
};
