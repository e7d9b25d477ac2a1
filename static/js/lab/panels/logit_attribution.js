// Direct logit attribution: one next-token logit split into what the embedding, every head, every FFN and the
// biases wrote into the residual stream, the final norm's scale frozen from the real run (the logit_attribution
// experiment). Every number shown comes from the answer.

import { categoryAxis, draw, fitMargins, fontSize, heatmap, rowsHeight, tokenLabels } from "../../shared/plot.js";
import { h, tokenText } from "../../shared/dom.js";
import { int, POSITIONS, str } from "../state.js";
import { fmt, lineLayout, numberField } from "../ui.js";

/** A text box for one token (its change, on Enter or leaving it, is one go() like every control's). */
function tokenField(field, value, label, placeholder) {
  return h("label", { class: "field inline" }, h("span", { text: label }),
    h("input", { type: "text", "data-field": field, "data-kind": "str", value, placeholder, size: 10, spellcheck: "false" }));
}

/** The explorer at one head's attention weights, on the same model and sentence. */
function explorerLink(s, layer, head) {
  return `/?${new URLSearchParams({ model: s.model, text: s.text, lang: s.lang, stage: "softmax", layer, head })}`;
}

const quoted = (token) => `“${tokenText(token)}”`;

export default {
  fields: { target: str(""), versus: str(""), position: int(-1, undefined, POSITIONS) }, // -1: the last position

  load({ s, v, ask }) {
    // a soft cap on the logits (Gemma 2) bends the sum of the parts: the server refuses it, the page says why
    const cap = s.info.config && s.info.config.logit_softcap;
    if (cap) return { softcap: cap };
    const body = { model: s.model, text: s.text };
    if (v.target) body.target = v.target;
    if (v.versus) body.versus = v.versus;
    if (v.position >= 0) body.position = v.position;
    return ask(body);
  },

  controls({ v, say }, data) {
    if (data && data.softcap) return []; // nothing to choose: the split is refused on this model
    return [
      tokenField("target", v.target, say("logit_attribution_target"), say("logit_attribution_target_top")),
      tokenField("versus", v.versus, say("logit_attribution_versus"), say("logit_attribution_versus_none")),
      numberField("position", v.position, say("logit_attribution_position"), { min: -1, max: 4096 }),
    ];
  },

  draw(board, data, ctx) {
    const { say, s } = ctx;
    if (data.softcap) {
      board.block("softcap", h("p", { class: "lab-note lab-refused", text: say("logit_attribution_softcap_refused", { model: s.model, cap: data.softcap }) }));
      return;
    }
    const sep = s.texts[s.lang].separator; // between sentences: " " in English, "" in Chinese
    const nHeads = data.heads[0].length;
    const nLayers = data.heads.length;
    const what = data.versus ? say("logit_attribution_difference", { target: quoted(data.target), versus: quoted(data.versus) })
      : say("logit_attribution_single", { target: quoted(data.target) });
    const read = data.tokens[data.position];
    const cells = data.heads.map((row, l) => [...row, data.ffn[l]]);
    let best = { v: 0, layer: 0, col: 0 };
    cells.forEach((row, l) => row.forEach((x, col) => { if (Math.abs(x) > Math.abs(best.v)) best = { v: x, layer: l, col }; }));
    const name = (layer, col) => (col < nHeads ? say("logit_attribution_head_name", { layer, head: col }) : say("logit_attribution_ffn_name", { layer }));
    const vars = {
      what, position: data.position, token: quoted(read), logit: fmt(data.logit, 3), total: fmt(data.total, 3),
      diff: data.max_abs_diff.toExponential(1), sigma: fmt(data.norm_scale, 3), best: name(best.layer, best.col), best_value: fmt(best.v, 2),
      layers: nLayers, heads: nHeads,
    };

    // the grid: layers × (heads + FFN), a diverging scale centred at 0; a head's cell opens it in the explorer
    const rows = data.heads.map((_, l) => say("logit_attribution_layer", { layer: l }));
    const cols = [...Array.from({ length: nHeads }, (_, i) => say("logit_attribution_head", { head: i })), say("logit_attribution_ffn")];
    const grid = board.card("attr-grid", { title: say("logit_attribution_grid_title", vars), note: [say("logit_attribution_grid_note", vars), say("logit_attribution_click")].join(sep) });
    const trace = heatmap({ z: cells, x: cols, y: rows, valueLabel: say("logit_attribution_part"), annotate: nLayers <= 12 && nHeads <= 12,
      hovertemplate: `%{y} · %{x}<br>${say("logit_attribution_part")} = %{z:.4f}<extra></extra>` });
    trace.colorbar = { ...trace.colorbar, title: { text: say("logit_attribution_part"), side: "right" } };
    const xaxis = categoryAxis(say("logit_attribution_column"), { automargin: false });
    const yaxis = categoryAxis(say("logit_attribution_layer_axis"), { autorange: "reversed", automargin: false });
    const limit = Math.max(...cells.flat().map(Math.abs), 1e-9);
    const margin = fitMargins(grid, { y: rows, x: cols, xSize: xaxis.tickfont.size, colorbar: [-limit, limit] });
    margin.r += Math.ceil(2 * fontSize()); // the colour bar's title, turned, right of its numbers
    draw(grid, [trace], { height: rowsHeight(nLayers, nLayers <= 12 ? 34 : 16, 260), margin, xaxis, yaxis }, "logit_attribution");
    if (grid.removeAllListeners) grid.removeAllListeners("plotly_click");
    if (grid.on) grid.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (!point || !Array.isArray(point.pointIndex)) return;
      const [layer, col] = point.pointIndex;
      if (col < nHeads) window.open(explorerLink(s, layer, col), "_blank", "noopener");
    });

    // the running total: after the embeddings, then after each block; the last point is the sum of every part
    const steps = [say("logit_attribution_embed_short"), ...data.layers.map((_, l) => String(l))];
    draw(board.card("attr-running", { title: say("logit_attribution_running_title", vars), note: say("logit_attribution_running_note", vars) }), [
      { x: steps, y: data.running, mode: "lines+markers", name: say("logit_attribution_running") },
      { x: [steps[0], steps[steps.length - 1]], y: [data.logit, data.logit], mode: "lines", line: { dash: "dot", color: "#b2302b" }, name: say("logit_attribution_model_logit") },
    ], lineLayout(say("logit_attribution_after_block"), say("logit_attribution_running_y"), { xaxis: { type: "category" } }), "logit_attribution_running");

    // the top heads, split by the token each read: a_pj · (v_j W_O^h) · u
    const labels = tokenLabels(data.tokens);
    const bars = data.top_heads.map((t) => ({
      type: "bar", x: labels, y: t.sources, name: `${name(t.layer, t.head)} (${fmt(t.contribution, 2)})`,
      hovertemplate: `%{x}<br>${say("logit_attribution_part")} = %{y:.4f}<extra>${name(t.layer, t.head)}</extra>`,
    }));
    const worst = Math.max(...data.top_heads.map((t) => t.identity_error));
    draw(board.card("attr-sources", { title: say("logit_attribution_sources_title", vars), note: say("logit_attribution_sources_note", { ...vars, source_diff: worst.toExponential(1) }) }),
      bars, lineLayout(say("logit_attribution_source"), say("logit_attribution_part"), { xaxis: { type: "category", tickangle: labels.length > 8 ? -45 : 0 } }), "logit_attribution_sources");

    // every part that is not a head or an FFN, the sum, and what the method can and cannot tell
    const sum = (xs) => (xs ? xs.reduce((a, b) => a + b, 0) : null);
    const parts = [
      ...Object.entries(data.embedding).map(([k, x]) => [say(`logit_attribution_embedding_${k}`), x]),
      [say("logit_attribution_all_heads"), sum(data.heads.flat())],
      [say("logit_attribution_all_ffns"), sum(data.ffn)],
      ...(data.attn_bias ? [[say("logit_attribution_attn_bias"), sum(data.attn_bias)]] : []),
      ...(data.ffn_bias ? [[say("logit_attribution_ffn_bias"), sum(data.ffn_bias)]] : []),
      ...(data.final_norm_bias !== null ? [[say("logit_attribution_final_bias"), data.final_norm_bias]] : []),
      [say("logit_attribution_total"), data.total],
      [say("logit_attribution_model_logit"), data.logit],
    ];
    const table = h("table", { class: "kv-table" }, h("tbody", {}, parts.map(([k, x]) => h("tr", {}, h("td", { text: k }), h("td", { text: fmt(x, 4) })))));
    const frozen = data.norm ? say("logit_attribution_frozen", vars) : say("logit_attribution_no_norm");
    board.block("attr-parts", h("div", {},
      h("h3", { text: say("logit_attribution_parts_title") }), table,
      h("p", { class: "lab-note", text: [say("logit_attribution_check", vars), frozen].join(sep) })), "half");
    board.block("attr-caveat", h("div", {},
      h("h3", { text: say("logit_attribution_caveat_title") }),
      h("p", { class: "lab-note", text: say("logit_attribution_caveat") })), "half");
  },
};
