// A gated DeltaNet layer's steps (Qwen3.5, model/deltanet.py): the split projection, the convolution, the unit
// q and k, the decay and write strength, the state matrix, the read-out and the gated norm. Each step's tensors
// are read by their hooks in the layer's deltanet site (ctx.names.site); the head is the page's, kept inside
// the layer's value heads (several value heads share one key head).

import { categoryAxis, draw, fitMargins, heatmap, indexLabels, rowsHeight, tokenLabels } from "../shared/plot.js";
import { badge, drawTokenMatrix, fetchStages } from "./common.js";

// the tensors each step draws, keyed by the step's main hook
const DRAWS = {
  split_q: ["split_q", "split_k", "split_v", "split_z", "split_a", "split_b"],
  conv_q: ["split_q", "conv_q", "split_v", "conv_v"],
  query: ["conv_q", "query", "conv_k", "key"],
  decay: ["decay", "beta"],
  state: ["state", "state_change"],
  read: ["query", "read"],
  gated: ["read", "split_z", "gated"],
};

function namesOf(ctx) {
  const site = ctx.names.site;
  return (DRAWS[ctx.names.hook] || [ctx.names.hook]).map((hook) => site[hook]).filter(Boolean);
}

// a [pos × head] matrix (a, b, g, β, the change of S): one column per value head
function perHead(board, key, ctx, tensor, title, { signed = true, note, className = "half" } = {}) {
  return drawTokenMatrix(board, key, ctx, tensor, { title, colDim: "head", signed, zmax: 1, note, className });
}

// the state matrix S of one head, [d_value × d_key], after the text's last token
function drawState(board, ctx, tensor, head) {
  const { t } = ctx;
  const z = tensor.matrix("d_value", "d_key", { head });
  const x = indexLabels(z[0] ? z[0].length : 0);
  const y = indexLabels(z.length);
  const last = ctx.tokens.length ? tokenLabels(ctx.tokens)[ctx.tokens.length - 1] : "";
  const plot = board.card("state", {
    title: t("dn_state_title", { head, token: last }),
    badges: [badge(ctx, "S", tensor)],
    exportData: () => ({ name: tensor.name, head, z }),
    filename: `${ctx.fname}_state`,
    note: t("dn_state_note"),
    className: "half",
  });
  const trace = heatmap({ z, x, y, signed: true, valueLabel: t("hover_cell") });
  draw(plot, [trace], {
    height: rowsHeight(z.length),
    margin: fitMargins(plot, { y, x, colorbar: [trace.zmin, trace.zmax] }),
    xaxis: { title: { text: "d_key" }, type: "category", showgrid: false },
    yaxis: categoryAxis("d_value", { autorange: "reversed" }),
  }, `${ctx.fname}_state`);
}

export default {
  hasHeads: true,
  async load(ctx) {
    return fetchStages(ctx, namesOf(ctx));
  },
  draw(board, stages, ctx) {
    const { t } = ctx;
    const site = ctx.names.site;
    const hook = ctx.names.hook;
    const values = stages[site.split_v] || stages[site.read] || stages[site.state] || stages[site.decay];
    const heads = values && values.has("head") ? values.size("head") : 1;
    const head = Math.min(ctx.head, heads - 1); // the layer's own value heads
    const keys = stages[site.split_q] || stages[site.conv_q] || stages[site.query];
    const keyHeads = keys ? keys.size("key_head") : 1;
    const keyHead = Math.floor(head / (heads / keyHeads));
    const hv = { head };
    const hk = { key_head: keyHead };
    const title = (label, own) => `${label} · ${t("head")} ${own ? head : keyHead}`;
    const shared = heads > keyHeads ? t("dn_shared_note", { heads, key_heads: keyHeads, h: head, kh: keyHead }) : "";
    if (hook === "split_q") {
      drawTokenMatrix(board, "q", ctx, stages[site.split_q], { title: title("q", false), fixed: hk, className: "third" });
      drawTokenMatrix(board, "k", ctx, stages[site.split_k], { title: title("k", false), fixed: hk, className: "third", note: shared });
      drawTokenMatrix(board, "v", ctx, stages[site.split_v], { title: title("v", true), fixed: hv, className: "third" });
      drawTokenMatrix(board, "z", ctx, stages[site.split_z], { title: title("z", true), fixed: hv, className: "third" });
      perHead(board, "a", ctx, stages[site.split_a], "a", { className: "third" });
      perHead(board, "b", ctx, stages[site.split_b], "b", { className: "third" });
    } else if (hook === "conv_q") {
      drawTokenMatrix(board, "q", ctx, stages[site.split_q], { title: title("q", false), fixed: hk, className: "half" });
      drawTokenMatrix(board, "cq", ctx, stages[site.conv_q], { title: title("silu(conv(q))", false), fixed: hk, className: "half" });
      drawTokenMatrix(board, "v", ctx, stages[site.split_v], { title: title("v", true), fixed: hv, className: "half" });
      drawTokenMatrix(board, "cv", ctx, stages[site.conv_v], { title: title("silu(conv(v))", true), fixed: hv, className: "half" });
    } else if (hook === "query") {
      drawTokenMatrix(board, "q", ctx, stages[site.conv_q], { title: title("q", false), fixed: hk, className: "half" });
      drawTokenMatrix(board, "nq", ctx, stages[site.query], { title: title("q / (‖q‖·√d)", false), fixed: hk, className: "half" });
      drawTokenMatrix(board, "k", ctx, stages[site.conv_k], { title: title("k", false), fixed: hk, className: "half" });
      drawTokenMatrix(board, "nk", ctx, stages[site.key], { title: title("k / ‖k‖", false), fixed: hk, className: "half", note: shared });
    } else if (hook === "decay") {
      perHead(board, "g", ctx, stages[site.decay], "g", { note: t("dn_decay_note") });
      perHead(board, "beta", ctx, stages[site.beta], "β", { signed: false });
    } else if (hook === "state") {
      drawState(board, ctx, stages[site.state], head);
      perHead(board, "change", ctx, stages[site.state_change], t("dn_change_title"), { signed: false, note: t("dn_change_note") });
    } else if (hook === "read") {
      drawTokenMatrix(board, "q", ctx, stages[site.query], { title: title("q", false), fixed: hk, className: "half", note: shared });
      drawTokenMatrix(board, "o", ctx, stages[site.read], { title: title("o = S·q", true), fixed: hv, className: "half" });
    } else {
      drawTokenMatrix(board, "o", ctx, stages[site.read], { title: title("o", true), fixed: hv, className: "third" });
      drawTokenMatrix(board, "z", ctx, stages[site.split_z], { title: title("z", true), fixed: hv, className: "third" });
      drawTokenMatrix(board, "y", ctx, stages[site.gated], { title: title("RMSNorm(o) ⊙ silu(z)", true), fixed: hv, className: "third" });
    }
  },
};
