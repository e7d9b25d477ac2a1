// Stages: Q·Kᵀ, ÷√d_k, mask, softmax (self- and cross-attention). One request brings all four
// matrices of the layer, so every cell's hover shows its dot product, scaled value and weight.
// "Without ÷√d_k" and the other interventions are server runs beside the chart (intervene.js).

import { categoryAxis, cellFontSize, draw, fitMargins, heatmap, rawLabels, rowsHeight, safe, tokenLabels } from "../shared/plot.js";
import { hiddenTrace, withoutHidden } from "../shared/screen_fit.js";
import { badge, drawGrid, fetchStages, keyTokensFor } from "./common.js";
import { readingNote, workedExample } from "./reading.js";
import { labelNote } from "../probes.js";
import { drawHeadOverview } from "../head_overview.js";
import { namesFor } from "../stages.js";
import { markShapes, showMark } from "../claim_marks.js";

const WORKED_MAX_TOKENS = 5; // a sentence this short gets the worked example with every number

// the layer's four matrices, by their hooks in its attention site (ctx.names.site, from the model's description)
const PARTS = ["scores_raw", "scores_scaled", "attn_scores", "pattern"];

/** scores_scaled is S/√d_k, and with a bias kind (ALiBi) also its bias (self-attention only). */
export function scaledLabel(ctx) {
  return ctx.posKind.where === "scores" && !ctx.step.cross ? `hover_scaled_${ctx.posKind.name}` : "hover_scaled";
}

function matrixChart(plot, ctx, { z, x, y, customdata, probs, masked, filename, marks = [] }) {
  const { t } = ctx;
  const fmt = (i) => `%{customdata[${i}]:.3f}`;
  const hovertemplate =
    `${t("ax_query")}: %{y}<br>${t("ax_key")}: %{x}<br>` +
    `${t("hover_dot")} = ${fmt(0)}<br>${t(scaledLabel(ctx))} = ${fmt(1)}<br>${t("hover_weight")} = ${fmt(2)}<extra></extra>`;
  const traces = [
    heatmap({ z: withoutHidden(z, masked), x, y, signed: !probs, zmin: probs ? 0 : undefined, zmax: probs ? 1 : undefined, customdata, hovertemplate }),
  ];
  // hidden cells: grey and empty, as in every other view (plot.js hiddenTrace)
  const grey = masked && hiddenTrace(masked, x, y, `${t("ax_query")}: %{y}<br>${t("ax_key")}: %{x}<br>${t("hover_masked")}<extra></extra>`);
  if (grey) traces.push(grey);
  const side = rowsHeight(z.length, z.length <= 12 ? 40 : 22, 300);
  const xaxis = categoryAxis(t("ax_key"), { side: "bottom", tickangle: x.length > 8 ? -45 : 0, automargin: false });
  // thinned labels (every other row) still print the row the lesson bar's claim speaks of
  const yaxis = categoryAxis(t("ax_query"), { autorange: "reversed", automargin: false, ...(marks.length ? { tick0: marks[0].row } : {}) });
  const margin = fitMargins(plot, { y, x, xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [traces[0].zmin, traces[0].zmax] });
  if (traces[0].textfont) traces[0].textfont = { size: cellFontSize(z.length) }; // presentation mode: read from the back of a room
  const shapes = markShapes(marks, x.length); // the row and cell the lesson bar's claim speaks of
  Promise.resolve(draw(plot, traces, { height: side, margin, xaxis, yaxis, ...(shapes.length ? { shapes } : {}) }, filename)).then(() => showMark(plot, marks));
}

/** "Head 6 · induction 0.84": a small map's title with its measured pattern and score, as the head menu names it (the menu adds the probe). */
export function headTitle(ctx, head) {
  const known = ctx.headLabel(head);
  const score = known && known.score !== null ? ` ${known.score.toFixed(2)}` : "";
  return safe(known ? `${ctx.t("head")} ${head} · ${ctx.t(`pat_${known.label}`)}${score}` : `${ctx.t("head")} ${head}`);
}

export default {
  hasHeads: true,
  hasLayers: true,
  async load(ctx) {
    const site = ctx.names.site;
    if (ctx.view === "layers") {
      const every = (ctx.plan.layers[ctx.step.stack] || []).map((layer) => namesFor(ctx.step, layer).main);
      return { all: await fetchStages(ctx, every) };
    }
    const worked = ctx.view === "head" && !ctx.step.cross && ctx.tokens.length <= WORKED_MAX_TOKENS;
    const names = [...new Set([...PARTS.map((p) => site[p]), ctx.names.main, ...(worked ? [site.v, site.z] : [])])];
    return { layer: await fetchStages(ctx, names), worked };
  },
  draw(board, data, ctx) {
    const { t } = ctx;
    const cross = ctx.step.cross;
    const kind = ctx.names.hook; // the step's own matrix: scores_raw, scores_scaled, attn_scores or pattern
    const probs = kind === "pattern";
    const qToks = ctx.tokens;
    const kToks = keyTokensFor(ctx, cross);
    const x = tokenLabels(kToks);
    const y = tokenLabels(qToks);
    const title = ctx.text.title;

    if (ctx.view === "layers") {
      // every layer's maps on one canvas (head_overview.js): 270 heads of a 30-layer model at once
      const names = Object.keys(data.all);
      const first = data.all[names[0]];
      const layers = names.map((name) => ({ layer: ctx.plan.stages.get(name).layer, tensor: data.all[name] }));
      const plot = board.card("overview", {
        title: `${title} — ${t("view_layers")}`,
        badges: [badge(ctx, `×${names.length}`, first)],
        exportData: () => ({ names, cells: layers.flatMap(({ layer, tensor }) => Array.from({ length: tensor.size("head") }, (_, hd) => ({ title: `L${layer} H${hd}`, z: tensor.matrix("q_pos", "k_pos", { head: hd }) }))) }),
        filename: `${ctx.fname}_layers`,
        note: t("overview_hint"),
      });
      drawHeadOverview(plot, ctx, layers, { probs });
      return;
    }

    const site = ctx.names.site;
    const tensors = Object.fromEntries(PARTS.map((p) => [p, data.layer[site[p]]]));
    const main = data.layer[ctx.names.main]; // its own matrix (also a soft cap's, which is no part)

    if (ctx.view === "heads") {
      const n = main.size("head");
      const mask = probs ? tensors.attn_scores : null; // weights: the mask's hidden cells grey, as on one head's map
      const cells = Array.from({ length: n }, (_, i) => ({ z: main.matrix("q_pos", "k_pos", { head: i }), masked: mask && mask.matrix("q_pos", "k_pos", { head: i }) }));
      const plot = board.card("grid", {
        title: `${title} — ${t("view_heads")}`,
        badges: [badge(ctx, "", main)],
        exportData: () => ({ name: main.name, heads: cells.map((c) => c.z) }),
        filename: `${ctx.fname}_heads`,
        note: t("overview_hint"),
      });
      // a projector: two rows of maps (9 heads: 5 + 4), so the grid fits under the lesson bar
      const cols = n <= 4 ? n : document.body.classList.contains("present") ? Math.min(6, Math.ceil(n / 2)) : 4;
      drawGrid(plot, ctx, cells, {
        rows: Math.ceil(n / cols),
        cols,
        x,
        y,
        signed: !probs,
        zmin: probs ? 0 : undefined,
        zmax: probs ? 1 : undefined,
        titles: cells.map((_, i) => headTitle(ctx, i)), // the head's measured pattern, as the head menu names it
        onPick: (i) => ctx.go({ head: i, view: "head" }),
      });
      return;
    }

    const fixed = { head: ctx.head };
    const raw = tensors.scores_raw.matrix("q_pos", "k_pos", fixed);
    const scaled = tensors.scores_scaled.matrix("q_pos", "k_pos", fixed);
    const masked = tensors.attn_scores.matrix("q_pos", "k_pos", fixed);
    const weights = tensors.pattern.matrix("q_pos", "k_pos", fixed);
    const z = main.matrix("q_pos", "k_pos", fixed);
    const customdata = raw.map((row, i) => row.map((v, j) => [v, scaled[i][j], weights[i][j]]));
    const hiddenCount = masked.flat().filter((v) => v === null).length;
    let note = "";
    const known = ctx.headLabel(ctx.head);
    if (known) note = labelNote(ctx.texts, known);
    // diagonal, previous and first token are places in a sentence reading itself: a target × source map has none
    if (probs && !cross) note = [note, readingNote(t, weights)].filter(Boolean).join(" ");
    if (kind === "attn_scores") {
      const why = ctx.cfg.sliding_window && !cross ? t("masked_window", { window: ctx.cfg.sliding_window }) : t("masked_future");
      note = hiddenCount ? `${why} ${t("masked_count", { n: hiddenCount, total: masked.flat().length })}` : t("masked_none");
    }
    const exportData = () => ({ name: main.name, head: ctx.head, rows: rawLabels(qToks), cols: rawLabels(kToks), z });
    const plot = board.card("main", {
      title: `${title} · ${t("head")} ${ctx.head}`,
      badges: [badge(ctx, "", main)],
      exportData,
      filename: `${ctx.fname}_h${ctx.head}`,
      note,
    });
    matrixChart(plot, ctx, {
      z,
      x,
      y,
      customdata,
      probs,
      masked: kind === "attn_scores" || probs ? masked : null,
      filename: `${ctx.fname}_h${ctx.head}`,
      marks: (ctx.marks || []).filter((m) => m.cross === Boolean(cross) && (m.last ?? m.row) < z.length && m.to < x.length),
    });

    if (data.worked) {
      const parts = { raw, scaled, masked, weights, v: data.layer[site.v], z: data.layer[site.z] };
      board.block("worked", workedExample(ctx, parts, rawLabels(qToks)), "worked-card");
    }
  },
};
