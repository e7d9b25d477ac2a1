// Shared pieces of the stage panels.

import { api, decodeStages } from "../shared/api.js";
import { h } from "../shared/dom.js";
import { absMax, categoryAxis, draw, fitMargins, heatmap, indexLabels, rawLabels, rowsHeight, shapeBadge, textWidth, tokenLabels } from "../shared/plot.js";
import { hiddenTrace, withoutHidden } from "../shared/screen_fit.js";

/** Fetch some trace stages (exact names) for the current text; cached per request. */
export async function fetchStages(ctx, names, extra = {}) {
  const answer = await api.trace({ ...ctx.req, stages: names, top_k: 0, ...extra });
  return decodeStages(answer);
}

/** A shape badge ("[seq 7, d_model 64]") with the dims named in the page's language. */
export function badge(ctx, label, tensor) {
  const shape = shapeBadge(label, tensor, (dim) => (ctx.texts.has(`dim_${dim}`) ? ctx.t(`dim_${dim}`) : dim));
  // an overflow is shown, never hidden: the cells that are not numbers (drawn blank), counted by the server
  if (tensor.nonfinite) shape.append(h("span", { class: "nonfinite", text: ctx.t("nonfinite_cells", { n: tensor.nonfinite }) }));
  return shape;
}

/** Labels for the columns of a [.., dim] matrix. */
export function dimLabels(n) {
  return indexLabels(n);
}

// n: how many columns; a pair axis has one per turned pair, and pair i turns dimension i with i + n
export function dimTitle(t, dim, n) {
  return { d_model: t("ax_dim"), d_head: t("ax_dhead"), d_mlp: t("ax_dmlp"), pair: t("ax_pair", { half: n }), expert: t("ax_expert"), head: t("head") }[dim] || dim;
}

/**
 * A [pos × dim] heatmap of `tensor` (fixed: other dims), token labels on y, dims on x.
 * Returns the export function.
 */
/**
 * When a few cells dwarf the rest (a "massive activation", often on the first token), a colour scale
 * up to the largest |value| paints everything else white. Then the scale stops at the 99.5th percentile
 * of |value| and the card's note says so, with the largest value and its row: {limit, max, row}, or null.
 */
export function outlierClip(z) {
  const cells = [];
  let max = 0;
  let row = 0;
  z.forEach((values, r) => values.forEach((v) => {
    if (v === null || !Number.isFinite(v)) return;
    const a = Math.abs(v);
    cells.push(a);
    if (a > max) [max, row] = [a, r];
  }));
  if (cells.length < 50) return null;
  cells.sort((a, b) => a - b);
  const limit = cells[Math.floor(0.995 * (cells.length - 1))];
  return limit > 0 && max > 5 * limit ? { limit, max, row } : null;
}

export function drawTokenMatrix(board, key, ctx, tensor, { title, label = "", fixed = {}, tokens, colTokens, colDim, badges, note, signed = true, zmax: top = 1, className }) {
  const { t } = ctx;
  const rowDim = ["pos", "q_pos"].find((d) => tensor.has(d)) || tensor.dims[0];
  colDim = colDim || tensor.dims[tensor.dims.length - 1];
  const z = tensor.matrix(rowDim, colDim, fixed);
  const toks = tokens || ctx.tokens;
  const y = tokenLabels(toks).slice(0, z.length);
  const n = z[0] ? z[0].length : 0;
  const x = colDim === "k_pos" ? tokenLabels(colTokens || toks).slice(0, n) : dimLabels(n);
  const exportData = () => ({ name: tensor.name, fixed, rows: rawLabels(toks).slice(0, z.length), cols: x, z });
  const clip = signed ? outlierClip(z) : null;
  const clipNote = clip ? t("scale_clipped", { clip: clip.limit.toFixed(2), max: clip.max.toFixed(1), token: rawLabels(toks)[clip.row] }) : null;
  const plot = board.card(key, {
    title,
    badges: badges || [badge(ctx, label, tensor)],
    exportData,
    filename: `${ctx.fname}_${key}`,
    note: [note, clipNote].filter(Boolean).join(" ") || undefined,
    className,
  });
  const range = clip ? { zmin: -clip.limit, zmax: clip.limit } : { zmin: signed ? undefined : 0, zmax: signed ? undefined : top };
  const trace = heatmap({ z, x, y, signed, ...range, valueLabel: t("hover_cell") });
  const height = rowsHeight(z.length);
  const showX = x.length <= 64;
  draw(
    plot,
    [trace],
    {
      height,
      margin: fitMargins(plot, { y, x: showX ? x : [], colorbar: [trace.zmin, trace.zmax] }),
      xaxis: {
        title: { text: colDim === "k_pos" ? t("ax_key") : dimTitle(t, colDim, n) },
        type: "category",
        showgrid: false,
        showticklabels: showX,
        automargin: false,
      },
      yaxis: categoryAxis(t("ax_token"), { autorange: "reversed", automargin: false }),
    },
    `${ctx.fname}_${key}`,
  );
  return plot;
}

/**
 * A grid of small heatmaps in one Plotly figure (all heads, or layers × heads). A cell's `masked` (null =
 * hidden by the mask) draws those cells grey, as on the single map. Token labels where they fit: rows on
 * the first column of maps, columns under the maps with none below, every k-th where a row is thinner than
 * its label (U8 of teaching review 3: a class could not tell which row is "it").
 */
export function drawGrid(plot, ctx, cells, { rows, cols, x, y, signed, zmin, zmax, onPick, titles }) {
  const traces = [];
  const greys = [];
  if (signed && zmin === undefined) {
    const m = Math.max(...cells.map((c) => absMax(c.z)));
    zmin = -m; // one colour scale for every small map, so they compare
    zmax = m;
  }
  let [lo, hi] = [zmin ?? 0, zmax ?? 0]; // the colour bar's range (Plotly's own from the data when not given)
  if (zmin === undefined || zmax === undefined) {
    for (const cell of cells) for (const row of cell.z) for (const v of row) if (v !== null && Number.isFinite(v)) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
  }
  const size = document.body.classList.contains("present") ? 12 : 10; // the labels' px
  const height = Math.max(320, Math.min(1400, rows * (cols > 6 ? 150 : 210) + 80));
  const fit = fitMargins(plot, { y, x, ySize: size, xSize: size, xAngle: 90, yTitle: false, xTitle: false, colorbar: [lo, hi], top: 40 });
  const layout = {
    grid: { rows, columns: cols, pattern: "independent", xgap: 0.06, ygap: 0.12 },
    height,
    annotations: [],
    margin: { l: Math.max(40, fit.l), r: fit.r, t: 40, b: Math.max(20, fit.b) },
  };
  // a title wider than its map is cut ("Head 3 · first-token (atten…"): neighbours' titles never run together
  const mapWidth = (((plot.clientWidth || 900) - layout.margin.l - layout.margin.r) * (1 - (0.06 * (cols - 1)) / cols)) / cols;
  const fitTitle = (title) => {
    let chars = [...title];
    while (chars.length > 4 && textWidth(chars.join(""), size + 2) > mapWidth) chars = chars.slice(0, -2).concat("…");
    return chars.join("");
  };
  cells.forEach((cell, i) => {
    const axis = i === 0 ? "" : String(i + 1);
    const trace = heatmap({ z: withoutHidden(cell.z, cell.masked), x, y, signed, zmin, zmax, showscale: i === 0, annotate: false, valueLabel: ctx.t("hover_cell") });
    trace.xaxis = `x${axis}`;
    trace.yaxis = `y${axis}`;
    trace.customdata = undefined;
    traces.push(trace);
    const grey = cell.masked && hiddenTrace(cell.masked, x, y, `%{y}<br>%{x}<br>${ctx.t("hover_masked")}<extra></extra>`, { xaxis: `x${axis}`, yaxis: `y${axis}`, xgap: 0, ygap: 0 });
    if (grey) greys.push({ grey, owner: i });
    const firstColumn = i % cols === 0; // token labels once per row of maps, never over a neighbour
    const lastInColumn = i + cols >= cells.length; // column labels only where no map sits below
    // dtick 1: draw() shows every k-th label where the final height leaves a row less than a label's line
    layout[`xaxis${axis}`] = { type: "category", showgrid: false, ticks: "", showticklabels: lastInColumn, tickangle: 90, dtick: 1, tickfont: { size } };
    layout[`yaxis${axis}`] = { type: "category", showgrid: false, autorange: "reversed", ticks: "", showticklabels: firstColumn, dtick: 1, tickfont: { size } };
    layout.annotations.push({
      text: fitTitle(titles[i]),
      xref: `x${axis} domain`,
      yref: `y${axis} domain`,
      x: 0.5,
      y: 1.0,
      yanchor: "bottom",
      showarrow: false,
      font: { size: size + 2 },
    });
  });
  draw(plot, [...traces, ...greys.map((g) => g.grey)], layout, `${ctx.fname}_grid`);
  if (onPick) {
    plot.removeAllListeners && plot.removeAllListeners("plotly_click");
    plot.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (point) onPick(point.curveNumber < cells.length ? point.curveNumber : greys[point.curveNumber - cells.length].owner); // a grey trace: its map's head
    });
  }
}

/** The stack's own tokens, or the source tokens for keys/values of cross-attention. */
export function keyTokensFor(ctx, cross) {
  return cross ? ctx.sourceTokens : ctx.tokens;
}
