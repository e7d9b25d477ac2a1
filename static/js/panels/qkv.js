// Stages with a head dimension and one vector per token: Q/K/V, their norm per head (Qwen3), their RoPE
// rotation, z = A·V.

import { indexLabels, tokenLabels } from "../shared/plot.js";
import { badge, drawGrid, drawTokenMatrix, fetchStages, keyTokensFor } from "./common.js";

// The tensors each step draws, by their hooks in the layer's attention site (ctx.names.site), keyed by the
// step's main hook: q (Q, K, V), norm_q (Qwen3's per-head norm), rot_q (RoPE), z (A·V).
// k_shared (Gemma 4): Q beside the K and V an earlier layer made, which this layer attends with.
const DRAWS = {
  q: ["q", "k", "v"],
  norm_q: ["q", "k", "norm_q", "norm_k"],
  rot_q: ["rot_q", "rot_k"],
  z: ["pattern", "v_attended", "z"],
  k_shared: ["q", "k_shared", "v_shared"],
  out_gate: ["z", "out_gate", "z_gated"], // Qwen3.5: the attention output's gate
};

// Gemma 4: a layer that shares an earlier layer's K and V has k_shared and v_shared (already normed and turned)
// in place of its own k, v, norm_k and rot_k; V as A weighs it is the normed v where the model norms it
function hookName(site, h) {
  if (["k", "norm_k", "rot_k"].includes(h)) return site[h] || site.k_shared;
  if (h === "v") return site.v || site.v_shared;
  if (h === "v_attended") return site.norm_v || site.v || site.v_shared;
  return site[h];
}

// what RoPE turns: q and k, or their per-head norms when the model has them (the step before)
function unrotated(site) {
  return site.norm_q ? [site.norm_q, hookName(site, "norm_k")] : [site.q, hookName(site, "k")];
}

function namesOf(ctx) {
  const site = ctx.names.site;
  const hook = ctx.names.hook;
  return [...(hook === "rot_q" ? unrotated(site) : []), ...(DRAWS[hook] || [hook]).map((h) => hookName(site, h))];
}

export default {
  hasHeads: true,
  async load(ctx) {
    return fetchStages(ctx, namesOf(ctx));
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const site = ctx.names.site;
    const cross = ctx.step.cross;
    const hook = ctx.names.hook;
    const head = ctx.head;
    // this layer's K/V heads (Gemma 4's global layers have their own number), read off a K or V tensor drawn
    const kvTensor = ["k", "norm_k", "rot_k", "v_attended"].map((h) => stages[hookName(site, h)]).find((x) => x && x.has("kv_head"));
    const nKv = kvTensor ? kvTensor.size("kv_head") : ctx.info.n_kv_heads;
    const kvHead = Math.floor(head / (ctx.info.n_heads / nKv));
    const keyToks = keyTokensFor(ctx, cross);
    const gqa = nKv < ctx.info.n_heads;
    const gqaNote = gqa ? t("gqa_note", { heads: ctx.info.n_heads, kv: nKv, h: head, kvh: kvHead }) : "";

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
    // a query-side tensor (Q, its norm and rotation, A, z) shows the query head; K and V their shared K/V head
    const title = (label, queryHead) => `${label} · ${t("head")} ${queryHead ? head : kvHead}`;
    if (hook === "q" || hook === "k_shared") {
      const [k, v] = hook === "q" ? [hookName(site, "k"), hookName(site, "v")] : [site.k_shared, site.v_shared];
      drawTokenMatrix(board, "q", ctx, stages[site.q], { title: title("Q", true), fixed: hq, className: "third" });
      drawTokenMatrix(board, "k", ctx, stages[k], { title: title("K", false), fixed: hkv, tokens: keyToks, className: "third", note: gqaNote });
      drawTokenMatrix(board, "v", ctx, stages[v], { title: title("V", false), fixed: hkv, tokens: keyToks, className: "third" });
    } else if (hook === "norm_q") {
      drawTokenMatrix(board, "q", ctx, stages[site.q], { title: title("Q", true), fixed: hq, className: "half" });
      drawTokenMatrix(board, "nq", ctx, stages[site.norm_q], { title: title("RMSNorm(Q)", true), fixed: hq, className: "half" });
      drawTokenMatrix(board, "k", ctx, stages[hookName(site, "k")], { title: title("K", false), fixed: hkv, className: "half" });
      drawTokenMatrix(board, "nk", ctx, stages[hookName(site, "norm_k")], { title: title("RMSNorm(K)", false), fixed: hkv, className: "half", note: gqaNote });
    } else if (hook === "rot_q") {
      const [qName, kName] = unrotated(site);
      const normed = Boolean(site.norm_q);
      drawTokenMatrix(board, "q", ctx, stages[qName], { title: title(normed ? "RMSNorm(Q)" : "Q", true), fixed: hq, className: "half" });
      drawTokenMatrix(board, "rq", ctx, stages[site.rot_q], { title: title("Q · RoPE", true), fixed: hq, className: "half" });
      drawTokenMatrix(board, "k", ctx, stages[kName], { title: title(normed ? "RMSNorm(K)" : "K", false), fixed: hkv, className: "half" });
      drawTokenMatrix(board, "rk", ctx, stages[hookName(site, "rot_k")], { title: title("K · RoPE", false), fixed: hkv, className: "half", note: gqaNote });
    } else if (hook === "out_gate") { // Qwen3.5: z times its gate sigmoid(W_G · x), per head and dimension
      drawTokenMatrix(board, "z", ctx, stages[site.z], { title: title("z", true), fixed: hq, className: "third" });
      drawTokenMatrix(board, "g", ctx, stages[site.out_gate], { title: title("sigmoid(W_G·x)", true), fixed: hq, signed: false, className: "third" });
      drawTokenMatrix(board, "zg", ctx, stages[site.z_gated], { title: title("z′ = z ⊙ gate", true), fixed: hq, className: "third" });
    } else {
      const pattern = stages[site.pattern];
      drawTokenMatrix(board, "a", ctx, pattern, {
        title: title("A = softmax", true),
        fixed: hq,
        colDim: "k_pos",
        colTokens: keyToks,
        signed: false,
        className: "third",
      });
      drawTokenMatrix(board, "v", ctx, stages[hookName(site, "v_attended")], { title: title("V", false), fixed: hkv, tokens: keyToks, className: "third", note: gqaNote });
      drawTokenMatrix(board, "z", ctx, stages[site.z], { title: title("z = A·V", true), fixed: hq, className: "third" });
    }
  },
};
