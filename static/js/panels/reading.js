// What the chart on screen shows, counted from its own numbers: where each row of an attention
// pattern puts its largest weight, and the worked example (Q·Kᵀ, ÷√d_k, softmax, weighted sum)
// for a short sentence, every number read from the model's trace. Nothing here is asserted.

import { h } from "../shared/dom.js";

/** For each query row: is its largest weight on itself, the previous token, the first token, or elsewhere? */
export function readRows(weights) {
  const counts = { n: 0, self: 0, prev: 0, first: 0, other: 0 };
  weights.forEach((row, i) => {
    let best = -1;
    row.forEach((v, j) => {
      if (v !== null && (best < 0 || v > row[best])) best = j;
    });
    if (best < 0 || i === 0) return; // the first row has one key only: it says nothing
    counts.n += 1;
    if (best === i) counts.self += 1;
    else if (best === i - 1) counts.prev += 1;
    else if (best === 0) counts.first += 1;
    else counts.other += 1;
  });
  return counts;
}

/** One sentence: how this head's rows (after the first) place their largest weight. */
export function readingNote(t, weights) {
  const c = readRows(weights);
  return c.n ? t("reading_rows", c) : "";
}

const fmt = (v) => (v === null || v === undefined ? "−∞" : v.toFixed(3));

function table(caption, head, rows) {
  return h(
    "table",
    { class: "sheet-table worked-table" },
    h("caption", { text: caption }),
    h("thead", {}, h("tr", {}, head.map((x) => h("th", { text: x })))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((x, i) => (i === 0 ? h("th", { text: x }) : h("td", { text: x })))))),
  );
}

/** The worked example of one head: up to 5 tokens, every number from the trace (data: pattern parts + v, z). */
export function workedExample(ctx, { raw, scaled, masked, weights, v, z }, labels) {
  const { t } = ctx;
  const kv = Math.floor(ctx.head / (ctx.info.n_heads / ctx.info.n_kv_heads));
  const cols = ["", ...labels];
  const rowsOf = (m) => m.map((row, i) => [labels[i], ...row.map(fmt)]);
  const last = labels.length - 1;
  const dims = Math.min(4, ctx.info.d_head);
  const vRows = v.matrix("pos", "d_head", { kv_head: kv });
  const zRow = z.matrix("pos", "d_head", { head: ctx.head })[last];
  const w = weights[last];
  const sum = Array.from({ length: dims }, (_, d) => w.reduce((acc, wj, j) => acc + (wj || 0) * vRows[j][d], 0));
  const dimHead = Array.from({ length: dims }, (_, d) => `v[${d}]`);
  const weighted = [
    ...labels.map((label, j) => [label, fmt(w[j]), ...vRows[j].slice(0, dims).map(fmt)]),
    [t("worked_sum"), "1", ...sum.map(fmt)],
    [t("worked_model_z"), "", ...zRow.slice(0, dims).map(fmt)],
  ];
  return h(
    "div",
    { class: "worked" },
    h("p", { class: "worked-lead", text: t("worked_lead", { sqrt_d_head: ctx.vars.sqrt_d_head, d_head: ctx.info.d_head, head: ctx.head }) }),
    h(
      "div",
      { class: "worked-grid" },
      table(t("worked_raw"), cols, rowsOf(raw)),
      table(t(ctx.posKind.where === "scores" ? `worked_scaled_${ctx.posKind.name}` : "worked_scaled", { sqrt_d_head: ctx.vars.sqrt_d_head }), cols, rowsOf(scaled)),
      table(t("worked_masked"), cols, rowsOf(masked)),
      table(t("worked_softmax"), cols, rowsOf(weights)),
    ),
    table(t("worked_weighted", { token: labels[last], dims }), [t("ax_key"), t("hover_weight"), ...dimHead], weighted),
  );
}
