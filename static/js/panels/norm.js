// Stages: LayerNorm / RMSNorm — the normalised vectors and the per-token statistics. The `scale` stage
// (model/layers.py) is the divisor √(var + ε) or √(mean(x²) + ε), so the bars are labelled σ / RMS.

import { categoryAxis, draw, fitTurned, fontSize, legendTop, numberLabel, rawLabels, tokenLabels } from "../shared/plot.js";
import { badge, drawTokenMatrix, fetchStages } from "./common.js";

export default {
  async load(ctx) {
    return fetchStages(ctx, [ctx.names.main, ...ctx.names.extras]);
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const tensor = stages[ctx.names.main];
    drawTokenMatrix(board, "main", ctx, tensor, { title: ctx.text.title });
    const mean = stages[ctx.names.hooks.mean]; // LayerNorm only
    const scale = stages[ctx.names.hooks.scale];
    if (!scale && !mean) return;
    const labels = tokenLabels(ctx.tokens);
    const traces = [];
    const series = {};
    const rms = ctx.cfg.norm === "rmsnorm";
    if (mean) {
      series.mean = mean.vector(mean.dims[0]);
      traces.push({ type: "bar", name: t("norm_mean"), x: labels, y: series.mean, marker: { color: "#8aa9d6" } });
    }
    if (scale) {
      series.scale = scale.vector(scale.dims[0]);
      traces.push({ type: "bar", name: t(rms ? "norm_scale_rms" : "norm_scale"), x: labels, y: series.scale, marker: { color: "#d9822b" } });
    }
    const plot = board.card("stats", {
      title: t("scale_chart"),
      badges: [mean && badge(ctx, "μ", mean), scale && badge(ctx, rms ? "RMS" : "σ", scale)].filter(Boolean),
      exportData: () => ({ series, index: rawLabels(ctx.tokens) }),
      filename: `${ctx.fname}_stats`,
    });
    const xaxis = categoryAxis(t("ax_token"), { automargin: false });
    let [lo, hi] = [0, 0];
    for (const tr of traces) for (const v of tr.y) if (Number.isFinite(v)) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
    const ticks = [numberLabel(lo * 1.1, hi * 1.1)]; // Plotly pads the bars' range a little
    const { margin, tickangle } = fitTurned(plot, { x: labels, xSize: xaxis.tickfont.size, y: ticks, ySize: fontSize(), top: legendTop() });
    xaxis.tickangle = tickangle;
    const legend = { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" };
    draw(plot, traces, { height: 300, margin, barmode: "group", showlegend: true, xaxis, yaxis: { title: { text: t("ax_value") }, automargin: false }, legend }, `${ctx.fname}_stats`);
  },
};
