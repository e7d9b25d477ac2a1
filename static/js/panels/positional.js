// Stage: positional encoding, drawn the way this model's kind works (ctx.posKind, the server's registry):
// an embedding kind's table (sinusoidal, learned), a rotary kind's angles (RoPE), a bias kind's bias (ALiBi).

import { api, Tensor } from "../shared/api.js";
import { categoryAxis, draw, fitMargins, fitTurned, fontSize, heatmap, legendTop, numberLabel, rawLabels, tokenLabels } from "../shared/plot.js";
import { h } from "../shared/dom.js";
import { badge, drawTokenMatrix, fetchStages } from "./common.js";

function curves(board, ctx, table, rowDim, colDim, title, pickCols, smooth = true) {
  const { t } = ctx;
  const z = table.matrix(rowDim, colDim);
  const n = z[0] ? z[0].length : 0;
  const cols = pickCols(n);
  const x = tokenLabels(ctx.tokens).slice(0, z.length);
  const series = {};
  // curves can coincide (the slow pairs stay near cos 0 = 1): each has its own dash and marker, and
  // the first ones are drawn wider, so one lying on another still shows around it
  const traces = cols.map((c, k) => {
    const y = z.map((row) => row[c]);
    series[`${colDim} ${c}`] = y;
    const style = { dash: DASHES[k % DASHES.length], width: Math.max(1.5, 5 - 1.2 * k), shape: smooth ? "spline" : "linear" };
    return { type: "scatter", mode: "lines+markers", name: `${colDim === "pair" ? "i" : "dim"} ${c}`, x, y, line: style, marker: { symbol: SYMBOLS[k % SYMBOLS.length], size: Math.max(5, 11 - 2 * k) } };
  });
  const plot = board.card("curves", {
    title,
    badges: [],
    exportData: () => ({ series, index: rawLabels(ctx.tokens) }),
    filename: `${ctx.fname}_curves`,
  });
  const xaxis = categoryAxis(t("ax_position"), { automargin: false });
  let lo = 0;
  let hi = 0;
  for (const tr of traces) for (const v of tr.y) if (v !== null) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
  const pad = 0.1 * (hi - lo); // Plotly's autorange pads the data a little
  const ticks = [numberLabel(lo - pad, hi + pad)];
  const { margin, tickangle } = fitTurned(plot, { x, xSize: xaxis.tickfont.size, y: ticks, ySize: fontSize(), top: legendTop() });
  xaxis.tickangle = tickangle;
  const layout = {
    height: 320,
    margin,
    xaxis,
    yaxis: { title: { text: t("ax_value") }, automargin: false },
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
  };
  draw(plot, traces, layout, `${ctx.fname}_curves`);
}

// RoPE scaling (Llama 3.1, linear, longrope): each pair's ω_i before (ω_i · s_i) and after (ω_i) the model's
// factors s_i; longrope has a second, long set (`long`: its scaled ω_i and factors), drawn as a third curve
function frequencies(board, ctx, scaled, factors, long = null) {
  const { t } = ctx;
  const x = scaled.map((_, i) => i);
  const unscaled = scaled.map((w, i) => w * factors[i]);
  const plot = board.card("frequencies", {
    title: t("rope_frequencies"),
    badges: [],
    exportData: () => ({ pair: x, unscaled, scaled, factors, ...(long ? { long_scaled: long.scaled, long_factors: long.factors } : {}) }),
    filename: `${ctx.fname}_frequencies`,
  });
  const traces = [
    { type: "scatter", mode: "lines+markers", name: t("rope_unscaled"), x, y: unscaled, line: { dash: "dot", width: 3 }, marker: { symbol: "circle", size: 8 } },
    { type: "scatter", mode: "lines+markers", name: t(long ? "rope_scaled_short" : "rope_scaled"), x, y: scaled, line: { width: 2 }, marker: { symbol: "diamond", size: 7 } },
  ];
  if (long) traces.push({ type: "scatter", mode: "lines+markers", name: t("rope_scaled_long"), x, y: long.scaled, line: { dash: "dash", width: 2 }, marker: { symbol: "square", size: 6 } });
  const lowest = Math.min(...scaled, ...(long ? long.scaled : []));
  const ticks = [numberLabel(lowest, Math.max(...unscaled))];
  const margin = fitMargins(plot, { x: x.map(String), y: ticks, top: legendTop() });
  const layout = {
    height: 300,
    margin,
    xaxis: { title: { text: t("ax_pair", { half: x.length }) }, automargin: false },
    yaxis: { title: { text: t("ax_frequency") }, type: "log", automargin: false },
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
  };
  draw(plot, traces, layout, `${ctx.fname}_frequencies`);
}

const DASHES = ["solid", "dash", "dot", "dashdot", "longdash"];
const SYMBOLS = ["circle", "square", "diamond", "x", "triangle-up"];
const spread = (n) => [...new Set([0, 1, Math.floor(n / 4) * 2, Math.floor(n / 2) * 2 - 2, n - 2].filter((c) => c >= 0 && c < n))];
const pairs = (n) => [...new Set([0, 1, Math.floor(n / 2), n - 1].filter((c) => c >= 0 && c < n))];

export default {
  hasHeads: true,
  async load(ctx) {
    const kind = ctx.posKind;
    const n = ctx.tokens.length;
    if (ctx.names.main) return { stages: await fetchStages(ctx, [ctx.names.main]) };
    // a kind that is not a table in the trace: what GET /api/positional-encoding shows of it
    if (kind.where === "q_k" || kind.where === "scores") {
      const answer = await api.positional({ kind: kind.name, length: String(n), model: ctx.model, encoding: "base64", dtype: "float32" });
      const tensors = {};
      for (const [key, payload] of Object.entries(answer.tensors)) tensors[key] = new Tensor(payload);
      return { answer, tensors };
    }
    return {};
  },
  draw(board, data, ctx) {
    const { t } = ctx;
    const kind = ctx.posKind;
    if (data.stages) {
      const table = data.stages[ctx.names.main];
      drawTokenMatrix(board, "table", ctx, table, { title: kind.learned ? "W_pos" : "PE" });
      curves(board, ctx, table, "pos", "d_model", t("dim_curves"), spread, !kind.learned);
      return;
    }
    // drawn by what the answer holds: a rotary kind shows angles, a bias kind its bias
    if (data.tensors && data.tensors.angles) {
      const angles = data.tensors.angles;
      // every angle is ≥ 0 (pos · ω): a one-sided colour scale from 0 to the largest angle
      const largest = Math.max(0, ...angles.matrix("pos", "pair").flat().filter((v) => v !== null));
      drawTokenMatrix(board, "angles", ctx, angles, { title: "θ(pos, i)", colDim: "pair", badges: [badge(ctx, "θ", angles)], signed: false, zmax: largest || 1 });
      curves(board, ctx, data.tensors.cos, "pos", "pair", "cos θ(pos, i)", pairs);
      const tensors = data.tensors;
      const long = tensors.long_factors ? { scaled: tensors.long_frequencies.vector("pair"), factors: tensors.long_factors.vector("pair") } : null;
      if (tensors.factors) frequencies(board, ctx, tensors.frequencies.vector("pair"), tensors.factors.vector("pair"), long);
      // partial rotary: fewer pairs than d_head / 2 turn; the rest of each head passes through
      const turned = 2 * angles.size("pair");
      const dHead = data.answer.d_head;
      // local and global layers (Gemma 3): the local ones turn with a base of their own, drawn beside
      const localAngles = tensors.local_angles;
      if (localAngles) {
        board.block("local", h("p", { class: "note", text: t("rope_local_note", { global: data.answer.base, local: data.answer.local_base }) }));
        const top = Math.max(0, ...localAngles.matrix("pos", "pair").flat().filter((v) => v !== null));
        drawTokenMatrix(board, "local_angles", ctx, localAngles, { title: `θ(pos, i) · ${t("rope_local_title", { local: data.answer.local_base })}`, colDim: "pair", badges: [badge(ctx, "θ", localAngles)], signed: false, zmax: top || 1 });
      }
      if (turned < dHead) board.block("partial", h("p", { class: "note", text: t("rope_partial_note", { turned, d_head: dHead, last: turned / 2 - 1, rest: dHead - turned }) }));
      return;
    }
    if (data.tensors && data.tensors.bias) {
      const bias = data.tensors.bias;
      const head = Math.min(ctx.head, bias.size("head") - 1);
      const causal = ctx.info.architecture !== "encoder";
      // a causal model's later keys are masked before the bias could matter: blank, not a bias of 0
      const z = bias.matrix("q_pos", "k_pos", { head }).map((row, i) => row.map((v, j) => (causal && j > i ? null : v)));
      const x = tokenLabels(ctx.tokens);
      const slopes = data.tensors.slopes.vector("head");
      const plot = board.card("bias", {
        title: `${kind.name} · ${t("head")} ${head} · m = ${Number(slopes[head]).toPrecision(3)}`,
        badges: [badge(ctx, "bias", bias)],
        exportData: () => ({ head, rows: rawLabels(ctx.tokens), cols: rawLabels(ctx.tokens), z }),
        filename: `${ctx.fname}_${kind.name}_h${head}`,
        note: causal ? t("alibi_blank") : "",
      });
      const trace = heatmap({ z, x, y: x, signed: true, valueLabel: t("hover_cell") });
      const xaxis = categoryAxis(t("ax_key"), { automargin: false });
      const margin = fitMargins(plot, { y: x, x, xSize: xaxis.tickfont.size, colorbar: [trace.zmin, trace.zmax] });
      draw(plot, [trace], { height: 420, margin, xaxis, yaxis: categoryAxis(t("ax_query"), { autorange: "reversed", automargin: false }) }, `${ctx.fname}_${kind.name}`);
      return;
    }
    board.block("none", h("p", { class: "note", text: t("pos_none") }));
  },
};
