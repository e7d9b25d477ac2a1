// Sizing a chart for a projector, and the look of a hidden cell. Pure layout arithmetic over Plotly's
// traces and layouts and the page's boxes; plot.js's draw() uses it. Imports nothing.

// ------------------------------------------------------------------ presentation mode: one chart a screen
// A projector shows one chart: it takes the rest of the screen below its top, less the note under it
// (a head's label, "Measured when…", stays on the screen too). It never gets so short that its token
// rows are thinner than MIN_ROW px (U1 of teaching review 3: E squashed rows to 10 px); then the page
// scrolls. Where rows or columns are still thinner than their labels, every k-th label is shown
// (thinTicks), on the page too, so no label is drawn over its neighbour (U2: a 24-token sentence).

export const MIN_ROW = 16; // px of a category row in presentation mode (cells stay cells, labels thin)
export const MIN_MAP = 130; // px of one small map of a grid (all heads) in presentation mode
const NOTE_SHARE = 0.25; // at most this share of the screen is kept for the note under a chart

export const isPresent = () => document.body.classList.contains("present");

/** Categories on the axis `name` ("x", "y") of a one-plot chart: the first trace's, or none. */
export function categories(traces, layout, name) {
  const axis = layout[`${name}axis`];
  if (!axis || axis.type !== "category" || layout.grid) return [];
  const trace = traces.find((tr) => Array.isArray(tr[name]) && !tr[`${name}axis`]);
  return trace ? trace[name] : [];
}

/** The note (and anything else) under the chart in its card: kept on a presentation screen. */
function roomBelow(el) {
  let px = 0;
  for (let next = el.nextElementSibling; next; next = next.nextElementSibling) if (!next.hidden) px += next.getBoundingClientRect().height;
  return Math.min(px + 12, NOTE_SHARE * window.innerHeight);
}

/** The chart's height: `height` (its panel's own) outside presentation mode; there, the rest of the screen, at least `least` px of plot. */
export function presentHeight(el, height, margin, least) {
  if (!isPresent()) return height;
  const top = el.getBoundingClientRect().top + window.scrollY;
  const fit = Math.round(window.innerHeight - top - 16 - roomBelow(el));
  return Math.max(300, fit, Math.ceil(margin.t + margin.b + least));
}

/** A category axis's dtick (category axes count in categories): every k-th label, where a label needs `need` px and a category has `px`. */
export function thinTicks(need, px) {
  return Math.max(1, Math.ceil(need / Math.max(px, 0.01)));
}

/** `layout` of a grid of small maps (layout.grid) with every k-th label on its axes for its final size; `need(axis, labels, along)`: px a label needs. */
export function thinGrid(el, traces, layout, margin, height, need) {
  const { rows, columns, xgap = 0.1, ygap = 0.1 } = layout.grid;
  const mapH = ((height - margin.t - margin.b) * (1 - (ygap * (rows - 1)) / rows)) / rows;
  const mapW = (((el.clientWidth || 600) - margin.l - margin.r) * (1 - (xgap * (columns - 1)) / columns)) / columns;
  const out = { ...layout };
  for (const trace of traces) {
    const suffix = (trace.xaxis || "x").slice(1);
    for (const [name, labels, px] of [["x", trace.x, mapW], ["y", trace.y, mapH]]) {
      const key = `${name}axis${suffix}`;
      const axis = out[key];
      if (!axis || axis.type !== "category" || axis.dtick !== 1 || !Array.isArray(labels)) continue;
      const dtick = thinTicks(need(axis, labels, name), px / labels.length);
      if (dtick > 1) out[key] = { ...axis, dtick };
    }
  }
  return out;
}

// ------------------------------------------------------------------ a tall chart's colour bar
// A heatmap's colour bar spans its plot's height: on a chart of many token rows (39 tokens: a plot
// ~850 px tall) it ran far below a 720 px screen, so the scale was never seen beside the rows shown
// first (the Gemma 4 per-layer-input screenshot). Past BAR_MAX px it keeps BAR_MAX px, at the plot's top.

export const BAR_MAX = 280;

/** `trace` with its colour bar BAR_MAX px long at the top of the plot, where the plot area (`height` less `margin`'s
 *  top and bottom) is taller; `trace` itself where the bar fits, is hidden, or has a length of its own. */
export function pinnedBar(trace, height, margin) {
  const own = trace.colorbar && (trace.colorbar.len !== undefined || trace.colorbar.y !== undefined);
  if (trace.type !== "heatmap" || trace.showscale === false || own || height - margin.t - margin.b <= BAR_MAX) return trace;
  return { ...trace, colorbar: { ...trace.colorbar, lenmode: "pixels", len: BAR_MAX, y: 1, yanchor: "top" } };
}

// ------------------------------------------------------------------ hidden (masked) cells
// A cell the mask hides (−∞ before softmax, weight 0 after it) looks the same in every view: one grey,
// no number (U13 of teaching review 3: grey "0" in one view, white "0.00" in another). The value trace
// leaves it empty (null), and a grey trace under the same axes fills it; hovering it says why.

export const HIDDEN_GREY = "#b8bec8";

/** `z` with the cells `masked` marks hidden (null there: the −∞ of the masked scores, attn_scores) left empty. */
export function withoutHidden(z, masked) {
  if (!masked) return z;
  return z.map((row, i) => row.map((v, j) => (masked[i] && masked[i][j] === null ? null : v)));
}

/** The grey trace of the hidden cells of `masked` (null = hidden), or null when none is hidden. */
export function hiddenTrace(masked, x, y, hovertemplate, extra = {}) {
  const hidden = masked.map((row) => row.map((v) => (v === null ? 1 : null)));
  if (!hidden.some((row) => row.some((v) => v !== null))) return null;
  const small = masked.length <= 12 && (masked[0] || []).length <= 12;
  return {
    type: "heatmap",
    z: hidden,
    x,
    y,
    name: "hidden",
    colorscale: [[0, HIDDEN_GREY], [1, HIDDEN_GREY]],
    showscale: false,
    hoverongaps: false,
    xgap: small ? 1 : 0,
    ygap: small ? 1 : 0,
    hovertemplate,
    ...extra,
  };
}
