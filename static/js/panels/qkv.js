// Stages with a head dimension and one vector per token: Q/K/V, their norm per head (Qwen3), their RoPE
// rotation, z = A·V.

import { indexLabels, tokenLabels } from "../shared/plot.js";
import { badge, drawGrid, drawTokenMatrix, fetchStages, keyTokensFor } from "./common.js";

function moduleBase(name) {
  return name.replace(/hook_[a-z_]+$/, "");
}

// what RoPE turns: q and k, or their per-head norms when the model has them (the step before)
function unrotated(ctx, base) {
  return ctx.info.config.qk_norm ? [`${base}hook_norm_q`, `${base}hook_norm_k`] : [`${base}hook_q`, `${base}hook_k`];
}

function namesOf(ctx) {
  const base = moduleBase(ctx.names.main);
  const key = ctx.step.key.replace(/^cross_/, "");
  if (key === "rope") return [...unrotated(ctx, base), `${base}hook_rot_q`, `${base}hook_rot_k`];
  if (key === "qk_norm") return [`${base}hook_q`, `${base}hook_k`, `${base}hook_norm_q`, `${base}hook_norm_k`];
  if (key === "z") return [`${base}hook_pattern`, `${base}hook_v`, `${base}hook_z`];
  return [`${base}hook_q`, `${base}hook_k`, `${base}hook_v`];
}

export default {
  hasHeads: true,
  async load(ctx) {
    return fetchStages(ctx, namesOf(ctx));
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const base = moduleBase(ctx.names.main);
    const cross = ctx.step.key.startsWith("cross_");
    const key = ctx.step.key.replace(/^cross_/, "");
    const head = ctx.head;
    const kvHead = Math.floor(head / (ctx.info.n_heads / ctx.info.n_kv_heads));
    const keyToks = keyTokensFor(ctx, cross);
    const gqa = ctx.info.n_kv_heads < ctx.info.n_heads;
    const gqaNote = gqa ? t("gqa_note", { heads: ctx.info.n_heads, kv: ctx.info.n_kv_heads, h: head, kvh: kvHead }) : "";

    if (ctx.view === "heads") {
      const tensor = stages[ctx.names.main];
      const headDim = tensor.has("head") ? "head" : "kv_head";
      const n = tensor.size(headDim);
      const cells = Array.from({ length: n }, (_, i) => ({ z: tensor.matrix("pos", "d_head", { [headDim]: i }) }));
      const plot = board.card("grid", {
        title: `${ctx.text.title} — ${t("view_heads")}`,
        badges: [badge(ctx, "", tensor)],
        exportData: () => ({ name: tensor.name, heads: cells.map((c) => c.z) }),
        filename: `${ctx.fname}_heads`,
        note: t("overview_hint"),
      });
      const cols = Math.min(4, n);
      drawGrid(plot, ctx, cells, {
        rows: Math.ceil(n / cols),
        cols,
        x: indexLabels(tensor.size("d_head")),
        y: tensor.has("head") ? tokenLabels(ctx.tokens) : tokenLabels(keyToks),
        signed: true,
        titles: cells.map((_, i) => `${t("head")} ${i}`),
        onPick: (i) => ctx.go({ head: i, view: "head" }),
      });
      return;
    }

    const hq = { head };
    const hkv = { kv_head: kvHead };
    const title = (label, name) => `${label} · ${t("head")} ${name.includes("hook_q") || name.includes("rot_q") || name.includes("norm_q") || name.endsWith("hook_z") || name.endsWith("hook_pattern") ? head : kvHead}`;
    if (key === "qkv") {
      drawTokenMatrix(board, "q", ctx, stages[`${base}hook_q`], { title: title("Q", "hook_q"), fixed: hq, className: "third" });
      drawTokenMatrix(board, "k", ctx, stages[`${base}hook_k`], { title: title("K", "hook_k"), fixed: hkv, tokens: keyToks, className: "third", note: gqaNote });
      drawTokenMatrix(board, "v", ctx, stages[`${base}hook_v`], { title: title("V", "hook_v"), fixed: hkv, tokens: keyToks, className: "third" });
    } else if (key === "qk_norm") {
      drawTokenMatrix(board, "q", ctx, stages[`${base}hook_q`], { title: title("Q", "hook_q"), fixed: hq, className: "half" });
      drawTokenMatrix(board, "nq", ctx, stages[`${base}hook_norm_q`], { title: title("RMSNorm(Q)", "norm_q"), fixed: hq, className: "half" });
      drawTokenMatrix(board, "k", ctx, stages[`${base}hook_k`], { title: title("K", "hook_k"), fixed: hkv, className: "half" });
      drawTokenMatrix(board, "nk", ctx, stages[`${base}hook_norm_k`], { title: title("RMSNorm(K)", "norm_k"), fixed: hkv, className: "half", note: gqaNote });
    } else if (key === "rope") {
      const [qName, kName] = unrotated(ctx, base);
      const normed = qName.endsWith("hook_norm_q");
      drawTokenMatrix(board, "q", ctx, stages[qName], { title: title(normed ? "RMSNorm(Q)" : "Q", "hook_q"), fixed: hq, className: "half" });
      drawTokenMatrix(board, "rq", ctx, stages[`${base}hook_rot_q`], { title: title("Q · RoPE", "rot_q"), fixed: hq, className: "half" });
      drawTokenMatrix(board, "k", ctx, stages[kName], { title: title(normed ? "RMSNorm(K)" : "K", "hook_k"), fixed: hkv, className: "half" });
      drawTokenMatrix(board, "rk", ctx, stages[`${base}hook_rot_k`], { title: title("K · RoPE", "rot_k"), fixed: hkv, className: "half", note: gqaNote });
    } else {
      const pattern = stages[`${base}hook_pattern`];
      drawTokenMatrix(board, "a", ctx, pattern, {
        title: title("A = softmax", "hook_pattern"),
        fixed: hq,
        colDim: "k_pos",
        colTokens: keyToks,
        signed: false,
        className: "third",
      });
      drawTokenMatrix(board, "v", ctx, stages[`${base}hook_v`], { title: title("V", "hook_v"), fixed: hkv, tokens: keyToks, className: "third", note: gqaNote });
      drawTokenMatrix(board, "z", ctx, stages[`${base}hook_z`], { title: title("z = A·V", "hook_z"), fixed: hq, className: "third" });
    }
  },
};
