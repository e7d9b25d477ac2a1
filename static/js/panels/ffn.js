// Stages: the feed-forward network's wide hidden layer and its activation.

import { draw } from "../shared/plot.js";
import { tokenTexts, visible } from "../shared/dom.js";
import { FN_NAMES, GATES } from "../stage_text.js";
import { badge, drawTokenMatrix, fetchStages } from "./common.js";

function pickRows(plot, ctx) {
  if (plot.removeAllListeners) plot.removeAllListeners("plotly_click");
  plot.on("plotly_click", (event) => {
    const point = event.points && event.points[0];
    if (point && Array.isArray(point.pointIndex)) ctx.go({ token: point.pointIndex[0] });
  });
}

export default {
  async load(ctx) {
    const site = ctx.names.site; // the layer's FFN, by hook (from the model's description)
    return fetchStages(ctx, ["pre", "post", "gate", "up"].filter((hook) => site[hook]).map((hook) => site[hook]));
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const site = ctx.names.site;
    const gateFn = FN_NAMES[GATES[ctx.cfg.activation]]; // a gated FFN (SwiGLU, GeGLU, ReGLU): its gate's function
    const gated = Boolean(gateFn);
    const title = ctx.text.title;
    const pre = stages[site.pre];
    if (ctx.step.key === "ffn_in") {
      if (gated) {
        pickRows(drawTokenMatrix(board, "gate", ctx, pre, { title: "gate = x·W_gate", className: "half" }), ctx);
        pickRows(drawTokenMatrix(board, "up", ctx, stages[site.up], { title: "up = x·W_up", className: "half" }), ctx);
      } else {
        pickRows(drawTokenMatrix(board, "pre", ctx, pre, { title: `${title}: h` }), ctx);
      }
      return;
    }
    const post = stages[site.post];
    pickRows(drawTokenMatrix(board, "post", ctx, post, { title: gated ? `${gateFn}(gate) ⊙ up` : `${title}` }), ctx);
    const n = pre.size("pos");
    const tok = Math.min(ctx.token ?? n - 1, n - 1);
    const xs = pre.matrix("pos", "d_mlp")[tok];
    const curve = gated ? stages[site.gate] : post;
    const ys = curve.matrix("pos", "d_mlp")[tok];
    const label = `${tok}·${(ctx.tokens[tok] ? tokenTexts(ctx.tokens)[tok] : visible(""))}`;
    const plot = board.card("scatter", {
      title: t("activation_scatter", { tok: label }),
      badges: [badge(ctx, gated ? gateFn : ctx.cfg.activation, curve)],
      exportData: () => ({ token: label, series: { before: xs, after: ys }, index: xs.map((_, i) => i) }),
      filename: `${ctx.fname}_activation`,
      note: t("pick_token"),
    });
    draw(
      plot,
      [
        {
          type: "scatter",
          mode: "markers",
          x: xs,
          y: ys,
          marker: { size: 6, color: "#3b6fb6", opacity: 0.7 },
          hovertemplate: `${t("ax_pre")} = %{x:.3f}<br>${t("ax_post")} = %{y:.3f}<extra></extra>`,
        },
      ],
      {
        height: 340,
        xaxis: { title: { text: `${t("ax_pre")}${gated ? " (gate)" : ""}` }, zeroline: true },
        yaxis: { title: { text: `${t("ax_post")}${gated ? ` — ${gateFn}(gate)` : ""}` }, zeroline: true },
      },
      `${ctx.fname}_activation`,
    );
  },
};
