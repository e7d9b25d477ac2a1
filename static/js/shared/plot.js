// Plotly helpers: safe labels, heatmaps, charts, shape badges and data export.
// Plotly reads pseudo-HTML (<b>, <a href>, <br>, entities) and $…$ (LaTeX) in labels, so every
// piece of user text that reaches a chart passes through `safe()` first.

import { h, tokenTexts } from "./dom.js";
import { categories, isPresent, MIN_MAP, MIN_ROW, pinnedBar, presentHeight, thinGrid, thinTicks } from "./screen_fit.js";

/** Escape text for a Plotly label: &, <, > as entities; $ as &#36; so it never opens LaTeX. */
export function safe(text) {
  return String(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\$/g, "&#36;");
}

const MAX_LABEL = 20;

/** Unique, safe category labels for tokens: "3·the" (the position keeps duplicates apart); a byte token: "3·我 1–2/3". */
export function tokenLabels(tokens) {
  return tokenTexts(tokens).map((shown, i) => {
    let text = shown;
    if ([...text].length > MAX_LABEL) text = `${[...text].slice(0, MAX_LABEL - 1).join("")}…`;
    return safe(`${i}·${text}`);
  });
}

/** Chart height for `rows` token rows: every label readable, long inputs scroll. */
export function rowsHeight(rows, perRow = 22, min = 260, max = 1700) {
  return Math.max(min, Math.min(max, 90 + perRow * rows));
}

export function indexLabels(n, prefix = "") {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

const FONT = '"Inter", "Segoe UI", "Helvetica Neue", Arial, "WenQuanYi Micro Hei", "Noto Sans CJK SC", "Microsoft YaHei", sans-serif';

export function baseLayout(extra = {}) {
  const big = document.body.classList.contains("present");
  return {
    font: { family: FONT, size: big ? 17 : 13, color: "#1b2330" },
    margin: { l: 90, r: 20, t: 36, b: 70 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "#ffffff",
    hoverlabel: { font: { family: FONT, size: big ? 17 : 14 } },
    ...extra,
  };
}

export function plotConfig(filename) {
  return {
    responsive: true,
    displaylogo: false,
    // offline by design: none of plotly.js's links to its cloud (they are off by default; said here so)
    showLink: false,
    showSendToCloud: false,
    showEditInChartStudio: false,
    plotlyServerURL: "",
    topojsonURL: "/static/vendor/topojson/", // geo maps only, which no chart here draws (static/vendor/README.md)
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
    toImageButtonOptions: { format: "png", filename: filename.replace(/[^\w.-]+/g, "_"), scale: 2 },
  };
}

export function categoryAxis(title, extra = {}) {
  return { title: { text: title }, type: "category", automargin: true, showgrid: false, zeroline: false, dtick: 1, tickfont: { size: tickSize() }, ...extra };
}

// ------------------------------------------------------------------ margins from the labels
// Plotly's automargin measures every tick label after drawing and then draws the chart again with
// the margins it found: most of a step's time on the stages with several heatmaps. fitMargins
// sizes the margins before the chart is drawn, from the same labels measured in the same font
// (canvas measureText: Chinese and other fallback glyphs included), so the axes can turn
// automargin off; tests/browser/test_chart_labels.py checks that every label stays inside its
// chart. The colour bar and the legend still push margins (layout.margin.autoexpand stays on):
// where the room left for them is too small, that costs a second draw, not a clipped label.

export const fontSize = () => (document.body.classList.contains("present") ? 17 : 13); // baseLayout's font
const tickSize = () => (document.body.classList.contains("present") ? 16 : 12); // categoryAxis's tick labels
const titleSize = () => Math.round(fontSize() * 1.2); // Plotly's axis title: its "big font" of the layout's
const TICK_LEN = 5; // Plotly's default tick length (counted whether ticks are drawn or not)
const TICK_PAD = 3; // between a tick and its label
const TITLE_PAD = 2; // Plotly keeps an axis title this far from the tick labels it moves it past
const SLACK = 1.06; // measured text vs drawn SVG text: a few percent to spare
const ENTITY = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&#36;": "$" };
const measurer = document.createElement("canvas").getContext("2d");
const widths = new Map(); // "size|label" -> px (a cache, like api.js's)

/** Width in px of a Plotly label (safe()'s entities read as the characters shown) at `size` px in the chart font. */
export function textWidth(label, size) {
  const key = `${size}|${label}`;
  let width = widths.get(key);
  if (width === undefined) {
    measurer.font = `${size}px ${FONT}`;
    width = measurer.measureText(String(label).replace(/&(amp|lt|gt|#36);/g, (m) => ENTITY[m])).width * SLACK;
    if (widths.size > 5000) widths.clear();
    widths.set(key, width);
  }
  return width;
}

function widest(labels, size) {
  let max = 0;
  for (const label of labels) max = Math.max(max, textWidth(label, size));
  return max;
}

/** Top margin for a one-row horizontal legend above the plot (legend: {orientation: "h", y: 1, yanchor: "bottom"}). */
export function legendTop() {
  return Math.round(fontSize() * 2.6 + 10);
}

/**
 * The angle Plotly's auto tick angles (0°, 30°, 90°) would give `labels` on an x axis `el`'s width
 * less `side` px of margins allows: fixed in advance, so the margin below holds exactly that.
 */
function tickAngle(el, labels, size, side) {
  const spacing = ((el.clientWidth || 600) - side) / Math.max(1, labels.length);
  const line = size * 1.3;
  if (spacing >= widest(labels, size) + 4) return 0;
  return spacing * Math.sin(Math.PI / 6) >= line ? 30 : 90;
}

/**
 * fitMargins for a chart whose x tick labels (every category shown: dtick 1) turn only as far as
 * they must: {margin, tickangle} (set the angle on the x axis, so Plotly does not choose another).
 */
export function fitTurned(el, options) {
  const { l, r } = fitMargins(el, { ...options, x: [] });
  const tickangle = tickAngle(el, options.x, options.xSize || fontSize(), l + r);
  return { margin: fitMargins(el, { ...options, xAngle: tickangle }), tickangle };
}

/** Height a label of width w and line height h takes when turned by `deg` degrees. */
function turned(w, h, deg) {
  const a = (Math.abs(deg) * Math.PI) / 180;
  return w * Math.sin(a) + h * Math.cos(a);
}

/** The widest tick label a value axis or colour bar over [zmin, zmax] can show ("−10.5"-like, digits at their widest). */
export function numberLabel(zmin, zmax) {
  const top = Math.max(Math.abs(zmin), Math.abs(zmax)) || 1;
  const range = Math.abs(zmax - zmin) || top;
  const ints = Math.max(1, Math.floor(Math.log10(top)) + 1);
  const decimals = Math.max(0, -Math.floor(Math.log10(range / 10))); // Plotly's auto ticks: <= 10 on an axis
  return `${zmin < 0 ? "−" : ""}${"0".repeat(ints)}${decimals ? `.${"0".repeat(decimals)}` : ""}`;
}

/**
 * Margins for a chart whose axes have automargin off: `y` / `x`: the tick labels (and `yTitle` /
 * `xTitle`: whether the axis has a title; `ySize` / `xSize`: tick font px, default the category
 * axes' / the layout's; `xAngle`: the labels' fixed angle, default: room for whichever of Plotly's
 * auto angles 0°, 30°, 90° it picks), `colorbar`: [zmin, zmax] of a colour bar right of the plot
 * in `el` (whose width sets the bar's 2 % gap), `top` / `right`: those margins without a colour
 * bar. Labels hidden on an axis: pass [].
 */
export function fitMargins(el, { y = [], x = [], yTitle = true, xTitle = true, ySize, xSize, xAngle, colorbar, top = 36, right = 20 }) {
  const line = 1.3; // Plotly's line height, in font sizes
  const title = titleSize() * line;
  ySize = ySize || tickSize();
  xSize = xSize || fontSize();
  // y: ticks and labels, then the title past them; Plotly's first guess for the title (10 px +
  // 2 tick fonts from the axis) when the labels are narrower than that
  const yLabels = y.length ? TICK_LEN + TICK_PAD + widest(y, ySize) : 0;
  const left = yTitle ? Math.max(yLabels + TITLE_PAD, 10 + 2 * ySize - title / 2) + title : yLabels;
  const xw = x.length ? widest(x, xSize) : 0;
  const angles = xAngle === undefined ? [0, 30, 90] : [xAngle];
  const xLabels = x.length ? TICK_LEN + TICK_PAD + Math.max(...angles.map((deg) => turned(xw, xSize * line, deg))) : 0;
  const bottom = xTitle ? Math.max(xLabels + TITLE_PAD, 10 + 3 * xSize - title) + title : xLabels;
  let r = right;
  if (colorbar) {
    const [zmin, zmax] = colorbar;
    const bar = 10 + 12 + 2 * TICK_PAD + textWidth(numberLabel(zmin, zmax), fontSize()) + 10; // xpad, thickness, labels, xpad
    r = Math.max(r, bar + 0.02 * (el.clientWidth || 600) + 6);
  }
  return { l: Math.ceil(left + 2), r: Math.ceil(r), t: top, b: Math.ceil(bottom + 10) };
}

/** Symmetric range around 0 so that white means zero. */
export function absMax(z) {
  let m = 0;
  for (const row of z) for (const v of row) if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  return m || 1;
}

export const DIVERGING = [
  [0, "#2b5fa8"],
  [0.25, "#8db3de"],
  [0.5, "#f7f7f7"],
  [0.75, "#eea08a"],
  [1, "#b2302b"],
];
export const SEQUENTIAL = [
  [0, "#f7fbff"],
  [0.3, "#b9d6ee"],
  [0.65, "#4a90c8"],
  [1, "#08306b"],
];

/**
 * A heatmap trace. `z` rows follow `y`, columns follow `x`.
 * Values are annotated in the cells when the matrix is small (≤ 12 × 12).
 */
export function heatmap({ z, x, y, signed = true, zmin, zmax, hovertemplate, valueLabel = "value", customdata, annotate, digits = 2, showscale = true, name }) {
  const small = z.length <= 12 && (z[0] || []).length <= 12;
  const m = signed ? absMax(z) : null;
  const trace = {
    type: "heatmap",
    z,
    x,
    y,
    name: name || "",
    colorscale: signed ? DIVERGING : SEQUENTIAL,
    zmin: zmin ?? (signed ? -m : undefined),
    zmax: zmax ?? (signed ? m : undefined),
    xgap: small ? 1 : 0,
    ygap: small ? 1 : 0,
    showscale,
    colorbar: { thickness: 12, outlinewidth: 0, ticklabeloverflow: "allow" }, // fitMargins leaves it room: no overflow checks
    hoverongaps: false,
    hovertemplate: hovertemplate || `%{y}<br>%{x}<br>${valueLabel} = %{z:.4f}<extra></extra>`,
  };
  if (customdata) trace.customdata = customdata;
  if (annotate ?? small) {
    trace.texttemplate = `%{z:.${digits}f}`;
    trace.textfont = { size: z.length <= 6 ? 14 : 11 }; // presentation mode: cellFontSize / fitCellText
  }
  return trace;
}

/** Cell numbers' size for a heatmap of `rows` rows: 20 / 15 px in presentation mode (read from the back of a room), else 14 / 11 px. */
export function cellFontSize(rows) {
  const present = document.body.classList.contains("present");
  return present ? (rows <= 6 ? 20 : 15) : rows <= 6 ? 14 : 11;
}

/** The widest number a heatmap's cell text `%{z:.Nf}` prints for `z` ("−00.00"-like). */
function widestCell(z, digits) {
  let top = 0;
  let negative = false;
  for (const row of z) for (const v of row) if (v !== null && v !== undefined) { top = Math.max(top, Math.abs(v)); negative ||= v < 0; }
  const ints = Math.max(1, Math.floor(Math.log10(top || 1)) + 1);
  return `${negative ? "−" : ""}${"0".repeat(ints)}${digits ? `.${"0".repeat(digits)}` : ""}`;
}

/**
 * The cell numbers of an annotated heatmap `trace` (heatmap()'s texttemplate), sized for a chart in
 * `el` with `margin` and `height`: in presentation mode 20 px (≤ 6 rows) or 15 px, read from the back
 * of a room, on the page 14 or 11 px. Cells too small for the numbers at that size lose them (hover
 * still shows each value): returns false then, and the chart's note says so.
 */
export function fitCellText(el, trace, margin, height) {
  if (!trace.texttemplate) return true;
  const rows = trace.z.length;
  const cols = (trace.z[0] || []).length;
  const size = cellFontSize(rows);
  const digits = Number((/\.(\d+)f/.exec(trace.texttemplate) || [0, 2])[1]);
  const width = ((el.clientWidth || 600) - margin.l - margin.r) / Math.max(1, cols) - (trace.xgap || 0);
  const tall = (height - margin.t - margin.b) / Math.max(1, rows) - (trace.ygap || 0);
  if (textWidth(widestCell(trace.z, digits), size) > width || size * 1.15 > tall) { // textWidth keeps 6 % to spare
    delete trace.texttemplate;
    delete trace.textfont;
    return false;
  }
  trace.textfont = { size };
  return true;
}

// ------------------------------------------------------------------ drawing (sized for presentation mode: screen_fit.js)

/** What one category label needs along its axis, in px: its line (turned labels: / sin of the angle) or, flat on x, its width. */
function labelNeed(axis, labels, along) {
  const size = (axis.tickfont && axis.tickfont.size) || fontSize();
  const angle = Math.abs(axis.tickangle || 0) % 180;
  return along === "y" ? size * 1.1 : angle ? (size * 1.25) / Math.sin((angle * Math.PI) / 180) : widest(labels, size) + 6;
}

/** Draw (or update in place) a Plotly chart; in presentation mode sized for the screen, labels thinned where they would overlap. */
export function draw(el, traces, layout, filename) {
  const margin = { ...baseLayout().margin, ...(layout.margin || {}) };
  const ys = categories(traces, layout, "y");
  const xs = categories(traces, layout, "x");
  const numbered = traces.some((tr) => tr.type === "heatmap" && /^%\{z/.test(tr.texttemplate || ""));
  const row = Math.max(MIN_ROW, numbered ? Math.ceil(cellFontSize(ys.length) * 1.2) + 1 : 0); // cell numbers keep their room
  const height = presentHeight(el, layout.height, margin, layout.grid ? layout.grid.rows * MIN_MAP : ys.length * row); // undefined: Plotly's 450
  const sized = layout.grid ? thinGrid(el, traces, { ...layout, height }, margin, height || 450, labelNeed) : { ...layout, height };
  if (ys.length && (layout.yaxis.dtick ?? 1) === 1) {
    const dtick = thinTicks(labelNeed(layout.yaxis, ys, "y"), ((height || 450) - margin.t - margin.b) / ys.length);
    if (dtick > 1) sized.yaxis = { ...layout.yaxis, dtick };
  }
  if (xs.length && (layout.xaxis.dtick ?? 1) === 1 && layout.xaxis.showticklabels !== false) {
    const dtick = thinTicks(labelNeed(layout.xaxis, xs, "x"), ((el.clientWidth || 600) - margin.l - margin.r) / xs.length);
    if (dtick > 1) sized.xaxis = { ...layout.xaxis, dtick };
  }
  // cell numbers the final size leaves no room for are dropped (hover still shows each value); a tall plot's colour bar
  // keeps to its top (pinnedBar)
  const fitted = layout.grid ? traces : traces.map((tr) => {
    const pinned = pinnedBar(tr, height || 450, margin);
    if (tr.type !== "heatmap" || !/^%\{z/.test(tr.texttemplate || "")) return pinned;
    const copy = { ...pinned };
    fitCellText(el, copy, margin, height || 450);
    return copy;
  });
  // Plotly measures a chart's box once; in presentation mode E makes the box narrower (the text beside it), so the width
  // is given there, and again on a chart drawn in that mode before (leaving it makes the box wider)
  if ((isPresent() || (el.layout && el.layout.width)) && el.clientWidth) sized.width = el.clientWidth;
  return window.Plotly.react(el, fitted, baseLayout(sized), plotConfig(filename));
}

export function purge(el) {
  if (el && el.data) window.Plotly.purge(el);
}

// ------------------------------------------------------------------ shape badges

/** "[seq 10, heads 8, d_head 64]" from a tensor's named dims and shape; `word(dim)` names a dim. */
export function shapeText(dims, shape, word = (dim) => dim) {
  const parts = dims.map((d, i) => `${word(d)} ${shape[i]}`);
  return `[${parts.join(", ")}]`;
}

export function shapeBadge(label, tensor, word) {
  return h(
    "span",
    { class: "shape-badge", "data-name": tensor.name, title: tensor.name },
    h("span", { class: "shape-label", text: label }),
    h("code", { class: "shape-dims", text: shapeText(tensor.dims, tensor.shape, word) }),
  );
}

// ------------------------------------------------------------------ export

function csvCell(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return String(value);
  let s = String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`; // no spreadsheet formulas from token text
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function download(filename, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** The numbers behind a chart: {title, rows (labels), cols (labels), z} or {title, series}. `t`: UI text. */
export function exportButtons(getData, filename, t) {
  const base = filename.replace(/[^\w.-]+/g, "_");
  return h(
    "span",
    { class: "export", title: t("export_hint") },
    h("button", {
      type: "button",
      class: "small export-json",
      text: t("export_json"),
      onclick: () => download(`${base}.json`, "application/json", JSON.stringify(getData(), null, 1)),
    }),
    h("button", {
      type: "button",
      class: "small export-csv",
      text: t("export_csv"),
      onclick: () => {
        const data = getData();
        const lines = [];
        if (data.z) {
          lines.push(["", ...data.cols].map(csvCell).join(","));
          data.z.forEach((row, i) => lines.push([data.rows[i], ...row].map(csvCell).join(",")));
        } else {
          const keys = Object.keys(data.series);
          lines.push(["", ...keys].map(csvCell).join(","));
          (data.index || []).forEach((label, i) => lines.push([label, ...keys.map((k) => data.series[k][i])].map(csvCell).join(",")));
        }
        download(`${base}.csv`, "text/csv", `${lines.join("\n")}\n`);
      },
    }),
  );
}

/** Plain-text token labels for exports (no escaping: CSV/JSON are data, not markup). */
export function rawLabels(tokens) {
  return tokens.map((tok, i) => `${i}·${tok.text}`);
}
