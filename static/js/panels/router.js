// Stage: a mixture of experts' router (model/moe.py): each token's probability for every expert, the experts it is
// sent to with their weights, and which experts each token used in every layer that has a router; with a shared
// expert (Qwen3.5-MoE) also its gate per token and its gated output, beside the routed experts; with experts beside
// the FFN (Gemma 4) first what the router and the experts each read of the stream, and after the routing the two
// summands, the dense FFN's output and the experts' weighted sum, and each one's length.

import { categoryAxis, draw, fitMargins, legendTop, rawLabels, rowsHeight, tokenLabels } from "../shared/plot.js";
import { badge, drawTokenMatrix, fetchStages } from "./common.js";

/** The router's layers and the name of each one's expert weights (from the model's description), in order. */
function routedLayers(ctx) {
  return Object.entries(ctx.step.at)
    .filter(([layer, at]) => layer !== "top" && at.hooks.expert_weights)
    .map(([layer, at]) => ({ layer: Number(layer), name: at.hooks.expert_weights }))
    .sort((a, b) => a.layer - b.layer);
}

/** Each token's chosen experts in one layer, strongest first: [[{expert, weight}]] (weight 0: not chosen). */
function chosen(weights) {
  return weights.matrix("pos", "expert").map((row) =>
    row.map((weight, expert) => ({ expert, weight })).filter((c) => c.weight).sort((a, b) => b.weight - a.weight));
}

function drawLayers(board, ctx, stages) {
  const { t } = ctx;
  const layers = routedLayers(ctx);
  const perLayer = layers.map(({ name }) => chosen(stages[name])); // [layer][pos] -> chosen
  const n = perLayer.length ? perLayer[0].length : 0;
  const y = tokenLabels(ctx.tokens).slice(0, n);
  const x = layers.map(({ layer }) => String(layer));
  const z = y.map((_, pos) => perLayer.map((row) => (row[pos][0] ? row[pos][0].expert : null))); // the strongest expert
  const text = y.map((_, pos) => perLayer.map((row) => row[pos].map((c) => c.expert).join(" ")));
  const hover = y.map((_, pos) => perLayer.map((row) => row[pos].map((c) => `${c.expert}: ${c.weight.toFixed(3)}`).join("<br>")));
  const plot = board.card("layers", {
    title: t("router_layers_title"),
    badges: [badge(ctx, "expert_weights", stages[layers[0].name])],
    exportData: () => ({ rows: rawLabels(ctx.tokens).slice(0, n), cols: x,
      chosen: perLayer.map((row, i) => ({ layer: layers[i].layer, tokens: row })) }),
    filename: `${ctx.fname}_experts_by_layer`,
    note: t("router_layers_note"),
  });
  const trace = {
    type: "heatmap", z, x, y, text, customdata: hover, texttemplate: "%{text}", textfont: { size: 11 },
    colorscale: "Rainbow", zmin: 0, zmax: Math.max(1, (ctx.cfg.n_experts || 1) - 1), xgap: 1, ygap: 1, hoverongaps: false,
    colorbar: { thickness: 12, outlinewidth: 0, title: { text: t("ax_expert") } },
    hovertemplate: `%{y} · %{x}<br>${t("hover_expert_weight")}:<br>%{customdata}<extra></extra>`,
  };
  draw(plot, [trace], {
    height: rowsHeight(n),
    margin: fitMargins(plot, { y, x, colorbar: [0, trace.zmax] }),
    xaxis: categoryAxis(t("ax_moe_layer"), { side: "top" }),
    yaxis: categoryAxis(t("ax_token"), { autorange: "reversed" }),
  }, `${ctx.fname}_experts_by_layer`);
}

/** The shared expert's gate, one bar per token (0: left out, 1: added whole), and its gated output. */
function drawShared(board, ctx, stages) {
  const { t } = ctx;
  const site = ctx.names.site;
  const gate = stages[site.shared_gate].vector("pos");
  const y = tokenLabels(ctx.tokens).slice(0, gate.length);
  const plot = board.card("shared", {
    title: t("router_shared_title", { layer: ctx.layer }),
    badges: [badge(ctx, "shared_gate", stages[site.shared_gate])],
    exportData: () => ({ rows: rawLabels(ctx.tokens).slice(0, gate.length), gate }),
    filename: `${ctx.fname}_shared_gate`,
    note: t("router_shared_note"),
    className: "half",
  });
  draw(plot, [{ type: "bar", orientation: "h", y, x: gate, marker: { color: "#d9822b" },
    hovertemplate: `%{y}<br>${t("ax_shared_gate")} = %{x:.3f}<extra></extra>` }], {
    height: rowsHeight(gate.length),
    margin: fitMargins(plot, { y, x: ["0", "1"] }),
    xaxis: { title: { text: t("ax_shared_gate") }, range: [0, 1] },
    yaxis: categoryAxis(t("ax_token"), { autorange: "reversed" }),
  }, `${ctx.fname}_shared_gate`);
  drawTokenMatrix(board, "shared_out", ctx, stages[site.shared_out], {
    title: t("router_shared_out_title"), className: "half" });
}

/** Each row's length ‖row‖ over its last dim (a token's vector over d_model). */
function lengths(tensor) {
  return tensor.matrix("pos", "d_model").map((row) => Math.sqrt(row.reduce((sum, v) => sum + (v ?? 0) ** 2, 0)));
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** Gemma 4: what the dense FFN and the experts each add to the layer's output, token by token (their lengths, two
 * bars per token), then the two vectors themselves, side by side; their sum is what the norm after the FFN reads. */
function drawBeside(board, ctx, stages) {
  const { t } = ctx;
  const site = ctx.names.site;
  const dense = lengths(stages[site.dense_out]);
  const experts = lengths(stages[site.experts_out]);
  const y = tokenLabels(ctx.tokens).slice(0, dense.length);
  const plot = board.card("beside", {
    title: t("router_beside_title", { layer: ctx.layer }),
    badges: [badge(ctx, "dense_out", stages[site.dense_out]), badge(ctx, "experts_out", stages[site.experts_out])],
    exportData: () => ({ rows: rawLabels(ctx.tokens).slice(0, dense.length), dense, experts }),
    filename: `${ctx.fname}_ffn_and_experts`,
    note: t("router_beside_note", { dense: mean(dense).toFixed(2), experts: mean(experts).toFixed(2), n: dense.length }),
  });
  const bar = (x, name, color) => ({ type: "bar", orientation: "h", y, x, name, marker: { color },
    hovertemplate: `%{y}<br>${name}: ‖·‖ = %{x:.3f}<extra></extra>` });
  draw(plot, [bar(dense, t("router_beside_dense"), "#4c78a8"), bar(experts, t("router_beside_experts"), "#d9822b")], {
    height: rowsHeight(2 * dense.length, 14),
    margin: fitMargins(plot, { y, x: [Math.max(...dense, ...experts).toFixed(1)], top: legendTop() }),
    barmode: "group", showlegend: true,
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
    xaxis: { title: { text: t("ax_length") }, rangemode: "tozero" },
    yaxis: categoryAxis(t("ax_token"), { autorange: "reversed" }),
  }, `${ctx.fname}_ffn_and_experts`);
  drawTokenMatrix(board, "dense_out", ctx, stages[site.dense_out], {
    title: t("router_dense_out_title"), label: "dense_out", className: "half" });
  drawTokenMatrix(board, "experts_out", ctx, stages[site.experts_out], {
    title: t("router_experts_out_title"), label: "experts_out", className: "half" });
}

/** Gemma 4: the stream as the router reads it (r = rms(h) ⊙ scale / √d_model) and as the experts read it (norm_pre). */
function drawInputs(board, ctx, stages) {
  const { t } = ctx;
  const site = ctx.names.site;
  drawTokenMatrix(board, "router_in", ctx, stages[site.router_in], {
    title: t("router_router_in_title", { layer: ctx.layer }), label: "router_in", className: "half" });
  drawTokenMatrix(board, "experts_in", ctx, stages[site.experts_in], {
    title: t("router_experts_in_title"), label: "experts_in", className: "half" });
}

export default {
  async load(ctx) {
    const site = ctx.names.site; // this layer's router stages, by hook
    const names = [site.router_in, site.experts_in, site.router_probs, site.expert_weights, site.shared_gate,
      site.shared_out, site.dense_out, site.experts_out, ...routedLayers(ctx).map((l) => l.name)];
    return fetchStages(ctx, [...new Set(names.filter(Boolean))]);
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const site = ctx.names.site;
    const used = ctx.cfg.n_experts_used;
    if (site.router_in) drawInputs(board, ctx, stages); // Gemma 4: the stream as its router and its experts read it
    drawTokenMatrix(board, "probs", ctx, stages[site.router_probs], {
      title: t("router_probs_title", { layer: ctx.layer }), signed: false, className: "half" });
    const weights = stages[site.expert_weights]; // Gemma 4: times each expert's own scale, so possibly above 1
    const top = Math.max(1, ...weights.matrix("pos", "expert").flat().filter((w) => w !== null));
    drawTokenMatrix(board, "weights", ctx, weights, {
      title: t("router_weights_title", { used }), signed: false, className: "half", zmax: top });
    if (site.shared_gate) drawShared(board, ctx, stages); // Qwen3.5-MoE: the expert every token goes through
    if (site.dense_out) drawBeside(board, ctx, stages); // Gemma 4: the dense FFN beside the experts
    drawLayers(board, ctx, stages);
  },
};
