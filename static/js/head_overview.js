// The all-layers × heads overview: every head's attention map as one small picture on one <canvas>,
// layers as columns and heads as rows, so a 30-layer, 9-head model (270 maps) fits one screen and
// draws in tens of milliseconds (one Plotly figure with 270 subplots took tens of seconds). A head
// the checkpoint's probes labelled (probes.js) carries its pattern's letter; hovering names the
// head and its score, a click (or Enter on the focused canvas) opens that head.

import { h } from "./shared/dom.js";
import { DIVERGING, SEQUENTIAL } from "./shared/plot.js";
import { headLabel, sentenceLang } from "./probes.js";

const LEFT = 34; // px for the head labels
const TOP = 18; // px for the layer labels
const GAP = 3;
const MASKED = [184, 190, 200]; // #b8bec8, as the one-head chart shows hidden cells
// one letter per labelled pattern, and its tag colour
export const TAGS = {
  "previous-token": { letter: "P", color: "#1d7a46" },
  induction: { letter: "I", color: "#b2302b" },
  "first-token": { letter: "F", color: "#5a4fb0" },
  "duplicate-token": { letter: "D", color: "#a66a00" },
  self: { letter: "S", color: "#4a505a" },
  coreference: { letter: "C", color: "#0b6e8a" },
};

function hex(color) {
  const n = parseInt(color.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** 256 RGB entries interpolated along a Plotly colour scale ([[stop, "#rrggbb"], ...]). */
function lookupTable(scale) {
  const stops = scale.map(([at, color]) => [at, hex(color)]);
  const table = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i += 1) {
    const x = i / 255;
    let k = 0;
    while (k < stops.length - 2 && x > stops[k + 1][0]) k += 1;
    const [a, ca] = stops[k];
    const [b, cb] = stops[k + 1];
    const f = b > a ? Math.min(1, Math.max(0, (x - a) / (b - a))) : 0;
    for (let c = 0; c < 3; c += 1) table[i * 3 + c] = Math.round(ca[c] + f * (cb[c] - ca[c]));
  }
  return table;
}

const TABLES = { signed: lookupTable(DIVERGING), probs: lookupTable(SEQUENTIAL) };

/** The [q_pos, k_pos] map of one head of a [head, q_pos, k_pos] Tensor as RGBA pixels (NaN: masked grey). */
function pixels(tensor, head, lo, hi, table) {
  const rows = tensor.size("q_pos");
  const cols = tensor.size("k_pos");
  const [hs, qs, ks] = ["head", "q_pos", "k_pos"].map((d) => tensor.strides[tensor.dims.indexOf(d)] || 0);
  const out = new ImageData(cols, rows);
  const span = hi - lo || 1;
  for (let r = 0; r < rows; r += 1) {
    for (let c = 0; c < cols; c += 1) {
      const v = tensor.values[head * hs + r * qs + c * ks];
      const at = (r * cols + c) * 4;
      if (Number.isFinite(v)) {
        const i = Math.max(0, Math.min(255, Math.round(((v - lo) / span) * 255))) * 3;
        out.data.set([table[i], table[i + 1], table[i + 2], 255], at);
      } else {
        out.data.set([...MASKED, 255], at);
      }
    }
  }
  return out;
}

/** The colour range shared by every map: [0, 1] for weights, ± the largest |value| otherwise. */
function range(layers, probs) {
  if (probs) return [0, 1];
  let m = 0;
  for (const { tensor } of layers) for (const v of tensor.values) if (Number.isFinite(v) && Math.abs(v) > m) m = Math.abs(v);
  return [-(m || 1), m || 1];
}

/**
 * Draw the overview into `el` (a board card's plot div). `layers`: [{layer, tensor}] with tensors
 * [head, q_pos, k_pos]; `probs`: the maps are attention weights (0..1). Returns the canvas.
 */
export function drawHeadOverview(el, ctx, layers, { probs }) {
  const { t } = ctx;
  const nHeads = layers.length ? layers[0].tensor.size("head") : 0;
  const nLayers = layers.length;
  const width = Math.max(320, el.clientWidth || 900);
  const cell = Math.max(14, Math.min(120, Math.floor((width - LEFT) / Math.max(1, nLayers)) - GAP));
  const cssW = LEFT + nLayers * (cell + GAP);
  const cssH = TOP + nHeads * (cell + GAP);
  const ratio = window.devicePixelRatio || 1;
  const canvas = h("canvas", { class: "head-overview", tabindex: "0", role: "img", "aria-label": t("view_layers") });
  canvas.dataset.cell = String(cell + GAP); // px from one map to the next (tests click by it)
  // the pixel buffer is cssW × cssH at the screen's density; CSS (.head-overview: max-width 100%, height auto)
  // shows it at its width, and `at` maps a pointer back through the size it is shown at
  canvas.width = Math.round(cssW * ratio);
  canvas.height = Math.round(cssH * ratio);
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.imageSmoothingEnabled = false;
  g.font = "11px sans-serif";
  g.fillStyle = "#1b2330";
  g.textBaseline = "bottom";
  const step = Math.ceil(24 / (cell + GAP)); // layer numbers at least 24 px apart
  layers.forEach(({ layer }, col) => {
    if (col % step === 0 || col === nLayers - 1) g.fillText(`L${layer}`, LEFT + col * (cell + GAP), TOP - 3);
  });
  g.textBaseline = "middle";
  for (let head = 0; head < nHeads; head += 1) g.fillText(`H${head}`, 2, TOP + head * (cell + GAP) + cell / 2);

  const [lo, hi] = range(layers, probs);
  const table = probs ? TABLES.probs : TABLES.signed;
  const lang = sentenceLang(ctx.req.text);
  const stack = ctx.step.stack || "";
  const scratch = document.createElement("canvas");
  const sg = scratch.getContext("2d");
  const labels = new Map(); // "layer:head" -> headLabel
  layers.forEach(({ layer, tensor }, col) => {
    scratch.width = tensor.size("k_pos");
    scratch.height = tensor.size("q_pos");
    for (let head = 0; head < nHeads; head += 1) {
      const x = LEFT + col * (cell + GAP);
      const y = TOP + head * (cell + GAP);
      sg.putImageData(pixels(tensor, head, lo, hi, table), 0, 0);
      g.drawImage(scratch, x, y, cell, cell);
      const known = headLabel(ctx.info, lang, { stack, layer, head });
      if (known && TAGS[known.label]) {
        labels.set(`${layer}:${head}`, known);
        const tag = TAGS[known.label];
        const size = Math.max(9, Math.min(14, Math.round(cell / 2.5)));
        g.fillStyle = tag.color;
        g.fillRect(x + cell - size, y, size, size);
        g.fillStyle = "#ffffff";
        g.font = `bold ${size - 2}px sans-serif`;
        g.textAlign = "center";
        g.fillText(tag.letter, x + cell - size / 2, y + size / 2 + 0.5);
        g.textAlign = "start";
      }
      if (layer === ctx.layer && head === ctx.head) {
        g.strokeStyle = "#1b2330";
        g.lineWidth = 2;
        g.strokeRect(x - 1, y - 1, cell + 2, cell + 2);
      }
    }
  });

  const at = (event) => {
    const box = canvas.getBoundingClientRect();
    const sx = box.width / cssW;
    const sy = box.height / cssH;
    const col = Math.floor(((event.clientX - box.left) / sx - LEFT) / (cell + GAP));
    const head = Math.floor(((event.clientY - box.top) / sy - TOP) / (cell + GAP));
    return col >= 0 && col < nLayers && head >= 0 && head < nHeads ? { layer: layers[col].layer, head } : null;
  };
  canvas.addEventListener("mousemove", (event) => {
    const hit = at(event);
    canvas.classList.toggle("pointing", Boolean(hit));
    canvas.title = hit ? headTitle(t, hit, labels.get(`${hit.layer}:${hit.head}`)) : "";
  });
  canvas.addEventListener("click", (event) => {
    const hit = at(event);
    if (hit) ctx.go({ layer: hit.layer, head: hit.head, view: "head" });
  });
  canvas.addEventListener("keydown", (event) => {
    if (event.key === "Enter") ctx.go({ view: "head" });
  });
  el.replaceChildren(canvas, legend(t, labels));
  return canvas;
}

/** "L18 · H3 — induction 0.84" (the label and score when the probes measured one). */
function headTitle(t, { layer, head }, known) {
  const name = `${t("layer")} ${layer} · ${t("head")} ${head}`;
  return known ? `${name} — ${t(`pat_${known.label}`)} ${known.score === null ? "" : known.score.toFixed(2)}` : name;
}

/** The letters used on this overview, each with its pattern's name. */
function legend(t, labels) {
  const used = new Set([...labels.values()].map((k) => k.label));
  const items = Object.entries(TAGS)
    .filter(([label]) => used.has(label))
    .map(([label, tag]) =>
      h("span", { class: "overview-tag" }, h("b", { class: `tag-${label}`, text: tag.letter }), ` ${t(`pat_${label}`)}`),
    );
  return h("p", { class: "overview-legend" }, items);
}
