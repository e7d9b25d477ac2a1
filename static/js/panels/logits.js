// Stage: logits and the next-token probabilities (the probabilities come from /api/predict).

import { api } from "../shared/api.js";
import { categoryAxis, draw, safe } from "../shared/plot.js";
import { h, tokenChips, tokenTexts, visible } from "../shared/dom.js";
import { badge, fetchStages } from "./common.js";

export default {
  async load(ctx) {
    const [stages, prediction] = await Promise.all([
      fetchStages(ctx, [ctx.names.main]),
      api.predict({ ...ctx.req, top_k: 10, sample_top_k: 10, temperature: 1, seed: 0, max_new_tokens: 8 }),
    ]);
    return { stages, prediction };
  },
  draw(board, data, ctx) {
    const { t } = ctx;
    const logits = data.stages[ctx.names.main];
    const top = data.prediction.top_k;
    const shown = tokenTexts(top); // a byte token: the character(s) it spells or can still become (shared/dom.js)
    const labels = shown.map((text, i) => safe(`${i + 1}. ${text}`));
    const bytePiece = top.findIndex((p, i) => shown[i] !== visible(p.text));
    const probs = top.map((p) => p.prob);
    const last = logits.size("pos") - 1;
    const row = logits.matrix("pos", "d_vocab")[last];
    const values = top.map((p) => row[p.id]);
    const plot = board.card("probs", {
      title: t("top_next"),
      badges: [badge(ctx, "logits", logits)],
      exportData: () => ({ series: { id: top.map((p) => p.id), prob: probs, logit: values }, index: top.map((p) => p.text) }),
      filename: `${ctx.fname}_next`,
      className: "half",
      note: bytePiece >= 0 ? t("byte_candidates_note", { shown: shown[bytePiece], raw: top[bytePiece].text }) : undefined,
    });
    draw(
      plot,
      [
        {
          type: "bar",
          orientation: "h",
          y: labels,
          x: probs,
          text: probs.map((p) => `${(p * 100).toFixed(1)}%`),
          textposition: "outside",
          marker: { color: "#3b6fb6" },
          hovertemplate: `%{y}<br>${t("ax_prob")} = %{x:.4f}<extra></extra>`,
        },
      ],
      { height: 420, xaxis: { title: { text: t("ax_prob") }, range: [0, Math.min(1, Math.max(...probs) * 1.25 + 0.02)] }, yaxis: categoryAxis("", { autorange: "reversed" }) },
      `${ctx.fname}_next`,
    );
    const plot2 = board.card("logits", {
      title: t("logits_at"),
      badges: [],
      exportData: () => ({ series: { logit: values }, index: top.map((p) => p.text) }),
      filename: `${ctx.fname}_logits`,
      className: "half",
    });
    draw(
      plot2,
      [{ type: "bar", orientation: "h", y: labels, x: values, marker: { color: "#d9822b" }, hovertemplate: `%{y}<br>${t("ax_logit")} = %{x:.3f}<extra></extra>` }],
      { height: 420, xaxis: { title: { text: t("ax_logit") } }, yaxis: categoryAxis("", { autorange: "reversed" }) },
      `${ctx.fname}_logits`,
    );
    const gen = data.prediction.generated;
    if (gen && gen.tokens && gen.tokens.length) {
      board.block("generated", h("div", { class: "generated" }, h("strong", { text: t("generated") }), tokenChips(gen.tokens)));
    }
  },
};
