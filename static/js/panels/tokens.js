// Stage: tokenize — the chips with ids, and the ids as a bar chart.

import { categoryAxis, draw, fitTurned, fontSize, numberLabel, rawLabels, tokenLabels } from "../shared/plot.js";
import { h, tokenChips } from "../shared/dom.js";
import { badge, fetchStages } from "./common.js";

export default {
  async load(ctx) {
    return fetchStages(ctx, [ctx.names.main]);
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const tensor = stages[ctx.names.main];
    const ids = tensor.vector(tensor.dims[0]);
    board.block("chips", h("div", {}, h("h3", { text: t("tokens") }), tokenChips(ctx.tokens, "big")));
    const title = t("ax_id");
    const plot = board.card("ids", {
      title,
      badges: [badge(ctx, "ids", tensor)],
      exportData: () => ({ name: tensor.name, series: { id: ids }, index: rawLabels(ctx.tokens) }),
      filename: `${ctx.fname}_ids`,
    });
    const labels = tokenLabels(ctx.tokens);
    const xaxis = categoryAxis(t("ax_token"), { automargin: false });
    const ticks = [numberLabel(0, Math.max(1, ...ids) * 1.1)]; // the ids axis: Plotly pads the range a little
    const { margin, tickangle } = fitTurned(plot, { x: labels, xSize: xaxis.tickfont.size, y: ticks, ySize: fontSize() });
    xaxis.tickangle = tickangle;
    draw(
      plot,
      [
        {
          type: "bar",
          x: labels,
          y: ids,
          text: ids.map(String),
          textposition: "outside",
          marker: { color: "#3b6fb6" },
          hovertemplate: `%{x}<br>id = %{y}<extra></extra>`,
        },
      ],
      { height: 320, margin, xaxis, yaxis: { title: { text: t("ax_id") }, automargin: false } },
      `${ctx.fname}_ids`,
    );
  },
};
