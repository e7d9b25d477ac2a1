// The one interventions view, for the explorer (intervene.js: the toggles beside a stage) and the lab (its
// interventions panel): the original run and the changed one side by side — each run's chart of the same
// stage (hidden −∞ cells grey as on the stage's own chart, the cell numbers where they fit, how the two
// differ), the next token of both (one pair of bars per token, and each run's table) and the loss of the
// sentence. Its words are the interventions_* of static/text/shared.<lang>.json, which both pages load.

import { h, tokenText } from "./dom.js";
import { NEXT_ASKED } from "./interventions.js";
import { absMax, categoryAxis, draw, fitCellText, fitMargins, heatmap, indexLabels, rawLabels, rowsHeight, safe, tokenLabels } from "./plot.js";
import { hiddenTrace, withoutHidden } from "./screen_fit.js";

const SHOWN = 8; // next tokens in each run's table (the bars: the tokens of either table)

/**
 * A run's [rows × cols] numbers of stage tensor `tensor` (at head `head` where it has heads) and their labels:
 * `tokens` name the query rows and the key columns; other columns are numbered (d_model, d_head). `hidden`:
 * the masked scores of the same layer (attention weights): the cells it hides are left empty (null), drawn grey.
 */
export function runMatrix(tensor, tokens, head, hidden = null) {
  const rowDim = ["q_pos", "pos"].find((d) => tensor.has(d)) || tensor.dims[0];
  const colDim = tensor.has("k_pos") ? "k_pos" : tensor.dims[tensor.dims.length - 1];
  const at = tensor.has("head") ? { head } : {};
  const masked = hidden && colDim === "k_pos" ? hidden.matrix(rowDim, colDim, at) : null; // null cells: hidden by the mask
  const z = withoutHidden(tensor.matrix(rowDim, colDim, at), masked);
  const y = tokenLabels(tokens).slice(0, z.length);
  const x = colDim === "k_pos" ? tokenLabels(tokens).slice(0, (z[0] || []).length) : indexLabels((z[0] || []).length);
  const colTitle = colDim === "k_pos" ? "interventions_axis_key" : colDim === "d_head" ? "interventions_axis_dhead" : "interventions_axis_dim";
  const width = (z[0] || []).length; // the export's column labels, raw (CSV/JSON are data, not markup)
  const cols = colDim === "k_pos" ? rawLabels(tokens).slice(0, width) : Array.from({ length: width }, (_, i) => String(i));
  return { z, x, y, rows: rawLabels(tokens), cols, keyed: colDim === "k_pos", colTitle };
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

function differenceNote(t, before, after) {
  const diff = difference(before.z, after.z);
  if (!diff.n && !diff.flips) return t("interventions_same");
  const most = diff.most >= 0.001 || !diff.most ? diff.most.toFixed(3) : diff.most.toExponential(1);
  return t("interventions_diff", { n: diff.n, flips: diff.flips, total: diff.total, most });
}

/** Grey cells for the values a run hides (−∞, or a weight the mask set to 0), as on the stage's own chart. */
function hiddenCells(z, x, y, t) {
  const grey = hiddenTrace(z, x, y, `%{y}<br>%{x}<br>${t("interventions_masked")}<extra></extra>`);
  return grey ? [grey] : [];
}

/** One run's chart: its numbers on one colour scale shared with the other run (`m`), weights on 0…1. */
function runChart(board, key, run, { title, note, probs, m, t, separator, exportData, fname }) {
  const card = (text) => board.card(key, { title, badges: [], exportData, filename: fname && `${fname}_${key}`, note: text, className: "half" });
  const plot = card(note);
  const small = run.z.length <= 12 && (run.z[0] || []).length <= 12;
  const trace = heatmap({ z: run.z, x: run.x, y: run.y, signed: !probs, zmin: probs ? 0 : -m, zmax: probs ? 1 : m, annotate: small, valueLabel: safe(t("interventions_cell")) });
  const ticks = run.x.length <= 64;
  const xaxis = categoryAxis(t(run.colTitle), { tickangle: run.x.length > 8 ? -45 : 0, showticklabels: ticks, automargin: false });
  const yaxis = categoryAxis(t("interventions_axis_query"), { autorange: "reversed", automargin: false });
  const margin = fitMargins(plot, { y: run.y, x: ticks ? run.x : [], xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [trace.zmin, trace.zmax] });
  const height = rowsHeight(run.z.length, small ? 40 : 22, 280);
  // the cell numbers at the single heatmap's size (presentation mode: 15 px), or none where the half-width cells are too small
  if (!fitCellText(plot, trace, margin, height)) card([note, t("interventions_cells_hidden")].filter(Boolean).join(separator));
  draw(plot, [trace, ...(run.keyed ? hiddenCells(run.z, run.x, run.y, t) : [])], { height, margin, xaxis, yaxis }, fname ? `${fname}_${key}` : key);
}

/** Each token of either run's table, beside itself: its probability in both runs (none where a run did not rank it). */
function nextBars(board, answers, t, what, fname) {
  const tops = answers.map((answer) => answer.top_tokens || []);
  const ids = [...new Set(tops.flatMap((top) => top.slice(0, SHOWN).map((r) => r.id)))];
  const text = new Map(tops.flat().map((r) => [r.id, tokenText(r)]));
  const seen = new Set();
  const labels = ids.map((id) => { // two tokens that print alike stay two bars
    const word = seen.has(text.get(id)) ? `${text.get(id)} #${id}` : text.get(id);
    seen.add(text.get(id));
    return safe(word);
  });
  const prob = (top, id) => (top.find((r) => r.id === id) || { prob: null }).prob;
  const plot = board.card("iv-next", { title: t("interventions_next_title"), className: "half", note: t("interventions_next_note", { shown: SHOWN, asked: NEXT_ASKED }) });
  const names = [t("interventions_original_short"), what];
  draw(plot, tops.map((top, i) => ({ type: "bar", x: labels, y: ids.map((id) => prob(top, id)), name: names[i] })), {
    barmode: "group",
    height: 320,
    xaxis: categoryAxis("", { tickangle: labels.length > 8 ? -40 : 0 }),
    yaxis: { title: { text: t("interventions_probability") }, rangemode: "tozero", automargin: true },
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" },
    margin: { l: 70, r: 20, t: 40, b: 70 },
  }, fname ? `${fname}_iv-next` : "iv-next");
}

function nextTable(t, answer) {
  const top = (answer.top_tokens || []).slice(0, SHOWN);
  return h(
    "table",
    { class: "sheet-table iv-next-table" },
    h("thead", {}, h("tr", {}, [t("interventions_rank"), t("interventions_token"), t("interventions_probability")].map((x) => h("th", { text: x })))),
    h("tbody", {}, top.map((p, i) => h("tr", {}, [String(i + 1), tokenText(p), `${(100 * p.prob).toFixed(1)}%`].map((x) => h("td", { text: x }))))),
  );
}

function lossLine(t, before, after) {
  const a = before.loss;
  const b = after.loss;
  if (typeof a !== "number" || typeof b !== "number") return h("p", { class: "iv-loss", "data-before": "", "data-after": "", text: t("interventions_loss_none") });
  const change = b - a;
  const sign = change > 0 ? "+" : change < 0 ? "−" : "±";
  return h("p", {
    class: "iv-loss",
    "data-before": String(a),
    "data-after": String(b),
    text: t("interventions_loss", { before: a.toFixed(3), after: b.toFixed(3), change: `${sign}${Math.abs(change).toFixed(3)}` }),
  });
}

/**
 * Both runs on `board`. `view`: {name (the stage), changes (the request's interventions), probs (attention
 * weights: values in 0..1), runs: the original
 * and the changed run, each {answer, ...runMatrix()}, what (the change, in words), where (the stage, layer and
 * head, in words)}. `t`: the page's texts (with shared.<lang>.json); `separator` between sentences;
 * `fname`: export file names (without it, no export buttons).
 */
export function drawBothRuns(board, view, t, { separator = " ", fname = null } = {}) {
  const [before, after] = view.runs;
  const m = Math.max(absMax(before.z), absMax(after.z)) || 1;
  const probs = Boolean(view.probs);
  const common = { probs, m, t, separator, fname };
  const exportData = (run, changes) => (fname ? () => ({ name: view.name, interventions: changes, rows: run.rows, cols: run.cols, z: run.z }) : undefined);
  runChart(board, "iv-before", before, { ...common, title: t("interventions_original", { where: view.where }), note: "", exportData: exportData(before, null) });
  runChart(board, "iv-after", after, { ...common, title: t("interventions_changed", { what: view.what, where: view.where }), note: differenceNote(t, before, after), exportData: exportData(after, view.changes) });
  const answers = [before.answer, after.answer];
  if (!(before.answer.top_tokens || []).length) {
    board.block("iv-none", h("div", {}, h("p", { class: "iv-none", text: t("interventions_no_next") }), lossLine(t, ...answers)), "iv-card");
    return;
  }
  nextBars(board, answers, t, view.what, fname);
  board.block("iv-tables", h("div", { class: "iv-compare" },
    h("div", { class: "iv-tables" }, ...answers.map((answer, i) => h("div", {}, h("h4", { text: i ? view.what : t("interventions_original_short") }), nextTable(t, answer)))),
    lossLine(t, ...answers),
  ), "half");
}
