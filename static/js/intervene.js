// Change one thing and see why, in the explorer: a toggle beside the stage an intervention changes
// (POST /api/trace with `interventions`), the original and the intervened run side by side — the
// stage's chart, the next-token table and the loss of the sentence. The intervention is state.iv
// (+ ivWindow, ivTemp), in the URL, changed only through go(). Every number shown comes from the API.

import { api, decodeStages } from "./shared/api.js";
import { h, visible } from "./shared/dom.js";
import { interventionsOf as buildInterventions } from "./shared/interventions.js";
import { sentenceStackName, stageName } from "./shared/stage_names.js";
import { absMax, categoryAxis, draw, fitCellText, fitMargins, heatmap, indexLabels, rawLabels, rowsHeight, safe, tokenLabels } from "./shared/plot.js";

export const WINDOWS = [1, 2, 3, 4, 6, 8, 16];
export const TEMPS = [0.25, 0.5, 2, 4];

/** Which toggles sit beside a stage (self-attention only: cross-attention keeps its source as trained). */
const AT = { scale: ["no_scale"], softmax: ["no_scale", "temperature"], mask: ["no_mask", "window"], z: ["ablate"], attn_out: ["ablate"], tokens: ["shuffle"], pos: ["shuffle"] };

export function togglesAt(step) {
  return step.key.startsWith("cross_") ? [] : AT[step.key] || [];
}

/** The state's intervention, if the stage it is at offers it (go() drops it elsewhere). */
export function activeAt(s, step) {
  return s.iv && togglesAt(step).includes(s.iv) ? s.iv : null;
}

/** The request's `interventions` for context `ctx` (its iv on). */
export function interventionsOf(ctx) {
  const params = { window: ctx.ivWindow, temperature: ctx.ivTemp, layer: ctx.layer, head: ctx.head, tokens: ctx.sourceTokens,
    // an encoder-decoder's head is named by its stack too: only the stack on screen loses it
    stack: ctx.info.architecture === "encoder-decoder" ? (ctx.step.stack === "decoder" ? "decoder" : "encoder") : null };
  return ctx.iv ? buildInterventions([ctx.iv], params) : null;
}

/** The trace stage the comparison charts: this stage's own, or (tokens, positions) layer 0's pattern. */
function chartStage(ctx) {
  if (ctx.iv !== "shuffle") return ctx.names.main;
  return stageName("pattern", 0, { stack: sentenceStackName(ctx.info) });
}

/** Both runs (original, intervened) of the chart's stage, with the next-token table and the loss. */
export async function loadIntervention(ctx) {
  if (!ctx.iv) return null;
  const name = chartStage(ctx);
  const body = { ...ctx.req, stages: [name], top_k: 8 };
  const changes = interventionsOf(ctx);
  const [before, after] = await Promise.all([api.trace(body), api.trace({ ...body, interventions: changes })]);
  return { name, changes, runs: [before, after].map((answer) => ({ answer, tensor: decodeStages(answer)[name] })) };
}

/** The model-specific sentence of an explanation: which variant is true for this model and stage. */
function explainKey(kind, ctx) {
  const arch = ctx.info.architecture;
  if (kind === "no_mask") {
    if (arch === "encoder") return "iv_explain_no_mask.encoder";
    if (arch === "encoder-decoder" && ctx.step.stack === "encoder") return "iv_explain_no_mask.encdec_encoder";
    return ctx.cfg.sliding_window ? "iv_explain_no_mask.window" : "iv_explain_no_mask.decoder";
  }
  if (kind === "ablate" && arch === "encoder-decoder") return `iv_explain_ablate.encdec_${ctx.step.stack === "decoder" ? "decoder" : "encoder"}`;
  return `iv_explain_${kind}`;
}

/** The placeholders of a toggle's words; pos_kind: the sentence on this model's positional encoding (iv_pos_<kind>). */
function ivVars(ctx) {
  const pos = ctx.cfg.pos_encoding || "none";
  return { ...ctx.vars, layer: ctx.layer ?? 0, head: ctx.head, w: ctx.ivWindow, temp: ctx.ivTemp, pos_kind: ctx.t(`iv_pos_${pos}`) };
}

/** The label of a toggle (with its current W or T). */
export function ivLabel(t, kind, ctx) {
  return t(`iv_what_${kind}`, ivVars(ctx));
}

function choice(cls, values, current, onchange) {
  return h(
    "select",
    { class: cls, onchange },
    values.map((v) => h("option", { value: String(v), text: String(v), selected: v === current ? true : undefined })),
  );
}

/** The toggles beside this stage, and what the one that is on does to this model. */
function toggles(ctx) {
  const { t } = ctx;
  const kinds = togglesAt(ctx.step);
  const on = ctx.iv;
  const items = kinds.map((kind) => {
    const box = h("input", {
      type: "checkbox",
      class: "iv-toggle",
      "data-iv": kind,
      checked: on === kind ? true : undefined,
      onchange: (e) => ctx.go({ iv: e.target.checked ? kind : null }),
    });
    const parts = [h("label", { class: "toggle" }, box, ` ${t(`iv_${kind}`, ivVars(ctx))}`)];
    if (kind === "window") parts.push(choice("iv-window", WINDOWS, ctx.ivWindow, (e) => ctx.go({ iv: "window", ivWindow: Number(e.target.value) })));
    if (kind === "temperature") parts.push(choice("iv-temp", TEMPS, ctx.ivTemp, (e) => ctx.go({ iv: "temperature", ivTemp: Number(e.target.value) })));
    return h("span", { class: "iv-item" }, parts);
  });
  const lines = [h("strong", { text: `${t("iv_title")} ` }), ...items];
  const explain = on ? t(explainKey(on, ctx), ivVars(ctx)) : t("iv_hint");
  return h("div", { class: "iv-bar", "data-on": on || "" }, h("div", { class: "iv-toggles" }, lines), h("p", { class: "iv-explain", text: explain }));
}

/** The [rows × cols] numbers a comparison chart shows, and its axis labels. */
function matrixOf(tensor, answer, ctx) {
  const rowDim = ["q_pos", "pos"].find((d) => tensor.has(d)) || tensor.dims[0];
  const colDim = tensor.has("k_pos") ? "k_pos" : tensor.dims[tensor.dims.length - 1];
  const z = tensor.matrix(rowDim, colDim, tensor.has("head") ? { head: ctx.head } : {});
  const onDecoder = ctx.info.architecture === "encoder-decoder" && ctx.step.stack !== "encoder" && ctx.iv !== "shuffle";
  const toks = onDecoder ? answer.target_tokens || [] : answer.tokens;
  const y = tokenLabels(toks).slice(0, z.length);
  const x = colDim === "k_pos" ? tokenLabels(toks).slice(0, (z[0] || []).length) : indexLabels((z[0] || []).length);
  return { z, x, y, rows: rawLabels(toks), keyed: colDim === "k_pos", colTitle: colDim === "d_head" ? "ax_dhead" : "ax_dim" };
}

/** How the runs' values differ: hidden (−∞) in one run only (flips), changed elsewhere (n), the largest change. */
function difference(a, b) {
  let n = 0;
  let flips = 0;
  let total = 0;
  let most = 0;
  a.forEach((row, i) =>
    row.forEach((v, j) => {
      const w = b[i] && b[i][j] !== undefined ? b[i][j] : null;
      total += 1;
      if ((v === null) !== (w === null)) flips += 1;
      else if (v !== null && v !== w) {
        n += 1;
        most = Math.max(most, Math.abs(v - w));
      }
    }),
  );
  return { n, flips, total, most };
}

/** Grey cells for the values a run hides (−∞), as on the stage's own chart. */
function hiddenCells(z, x, y, t) {
  const hidden = z.map((row) => row.map((v) => (v === null ? 1 : null)));
  if (!hidden.some((row) => row.some((v) => v !== null))) return [];
  return [{ type: "heatmap", z: hidden, x, y, colorscale: [[0, "#b8bec8"], [1, "#b8bec8"]], showscale: false, hoverongaps: false, hovertemplate: `%{y}<br>%{x}<br>${t("hover_masked")}<extra></extra>` }];
}

function nextTable(t, answer) {
  const top = answer.top_tokens || [];
  if (!top.length) return h("p", { class: "iv-none", text: t("iv_no_next") });
  return h(
    "table",
    { class: "sheet-table iv-next-table" },
    h("thead", {}, h("tr", {}, [t("iv_rank"), t("iv_token"), t("ax_prob")].map((x) => h("th", { text: x })))),
    h("tbody", {}, top.map((p, i) => h("tr", {}, [String(i + 1), visible(p.text), `${(100 * p.prob).toFixed(1)}%`].map((x) => h("td", { text: x }))))),
  );
}

function lossLine(t, before, after) {
  const a = before.loss;
  const b = after.loss;
  if (typeof a !== "number" || typeof b !== "number") return h("p", { class: "iv-loss", "data-before": "", "data-after": "", text: t("iv_loss_none") });
  const change = b - a;
  const sign = change > 0 ? "+" : change < 0 ? "−" : "±";
  return h("p", {
    class: "iv-loss",
    "data-before": String(a),
    "data-after": String(b),
    text: t("iv_loss", { before: a.toFixed(3), after: b.toFixed(3), change: `${sign}${Math.abs(change).toFixed(3)}` }),
  });
}

/** Toggles (always, where the stage has any) and, with one on, both runs side by side. */
export function drawIntervention(board, data, ctx) {
  const { t } = ctx;
  if (ctx.step.key.startsWith("cross_") && AT[ctx.step.key.replace(/^cross_/, "")]) {
    board.block("iv-bar", h("p", { class: "iv-explain", text: t("iv_cross_note") }), "iv-card");
    return;
  }
  if (!togglesAt(ctx.step).length) return;
  board.block("iv-bar", toggles(ctx), "iv-card");
  if (!data) return;
  const [before, after] = data.runs.map((run) => ({ ...run, ...matrixOf(run.tensor, run.answer, ctx) }));
  const m = Math.max(absMax(before.z), absMax(after.z)) || 1;
  const probs = /hook_pattern$/.test(data.name);
  const diff = difference(before.z, after.z);
  const what = ivLabel(t, ctx.iv, ctx);
  const where = ctx.iv === "shuffle" ? t("iv_shuffle_chart", { head: ctx.head }) : `${ctx.text.title} · ${t("head")} ${ctx.head}`;
  [
    ["iv-before", before, t("iv_original", { where }), ""],
    ["iv-after", after, t("iv_changed", { what, where }), diff.n || diff.flips ? t("iv_diff", { n: diff.n, flips: diff.flips, total: diff.total, most: diff.most >= 0.001 || !diff.most ? diff.most.toFixed(3) : diff.most.toExponential(1) }) : t("iv_same")],
  ].forEach(([key, run, title, note]) => {
    const card = (text) => board.card(key, {
      title,
      badges: [],
      exportData: () => ({ name: data.name, interventions: key === "iv-after" ? data.changes : null, rows: run.rows, z: run.z }),
      filename: `${ctx.fname}_${key}`,
      note: text,
      className: "half",
    });
    const plot = card(note);
    const small = run.z.length <= 12 && (run.z[0] || []).length <= 12;
    const trace = heatmap({ z: run.z, x: run.x, y: run.y, signed: !probs, zmin: probs ? 0 : -m, zmax: probs ? 1 : m, annotate: small, valueLabel: safe(t("hover_cell")) });
    const ticks = run.x.length <= 64;
    const xaxis = categoryAxis(run.keyed ? t("ax_key") : t(run.colTitle), { tickangle: run.x.length > 8 ? -45 : 0, showticklabels: ticks, automargin: false });
    const yaxis = categoryAxis(t("ax_query"), { autorange: "reversed", automargin: false });
    const margin = fitMargins(plot, { y: run.y, x: ticks ? run.x : [], xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [trace.zmin, trace.zmax] });
    const height = rowsHeight(run.z.length, small ? 40 : 22, 280);
    // the cell numbers at the single heatmap's size (presentation mode: 15 px), or none where the half-width cells are too small
    if (!fitCellText(plot, trace, margin, height)) card([note, t("iv_cells_hidden")].filter(Boolean).join(ctx.texts.separator));
    draw(plot, [trace, ...(run.keyed ? hiddenCells(run.z, run.x, run.y, t) : [])], { height, margin, xaxis, yaxis }, `${ctx.fname}_${key}`);
  });
  const [a, b] = data.runs.map((r) => r.answer);
  board.block(
    "iv-next",
    h(
      "div",
      { class: "iv-compare" },
      h("h3", { text: t("iv_next_title") }),
      h("div", { class: "iv-tables" }, h("div", {}, h("h4", { text: t("iv_original_short") }), nextTable(t, a)), h("div", {}, h("h4", { text: what }), nextTable(t, b))),
      lossLine(t, a, b),
    ),
    "iv-card",
  );
}
