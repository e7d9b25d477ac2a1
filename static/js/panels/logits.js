// Stage: logits and the next-token probabilities, both from /api/predict: its table carries each top token's
// logit, so the page never downloads the whole [pos, d_vocab] logits tensor (49,152 columns a position for
// SmolLM2: megabytes a view) to show ten of them. The badge names that tensor's real shape.

import { api } from "../shared/api.js";
import { categoryAxis, draw, safe } from "../shared/plot.js";
import { h, tokenChips, tokenTexts, visible } from "../shared/dom.js";
import { badge } from "./common.js";

/** The logits tensor's name, dims and shape (the plan's dims; pos: the tokens it reads, d_vocab: the vocabulary). */
function logitsShape(ctx) {
  const name = ctx.names.main;
  const dims = ctx.plan.dims[name] || ["pos", "d_vocab"];
  const sizes = { batch: 1, pos: ctx.tokens.length, d_vocab: ctx.info.vocab_size };
  return { name, dims, shape: dims.map((d) => sizes[d]) };
}

export default {
  async load(ctx) {
    const prediction = await api.predict({ ...ctx.req, top_k: 10, sample_top_k: 10, temperature: 1, seed: 0, max_new_tokens: 8 });
    return { prediction };
  },
  draw(board, data, ctx) {
    const { t } = ctx;
    const top = data.prediction.top_k;
    const shown = tokenTexts(top); // a byte token: the character(s) it spells or can still become (shared/dom.js)
    const labels = shown.map((text, i) => safe(`${i + 1}. ${text}`));
    const bytePiece = top.findIndex((p, i) => shown[i] !== visible(p.text));
    const probs = top.map((p) => p.prob);
    const values = top.map((p) => p.logit); // softmax of these at temperature 1 is `probs` (the same forward pass)
    const plot = board.card("probs", {
      title: t("top_next"),
      badges: [badge(ctx, "logits", logitsShape(ctx))],
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
