// The compare panel's data side: which stages both models record, and the 2-D or 1-D slice of one
// stage that each side draws (with one shared colour scale when the shapes match).

import { api } from "../shared/api.js";

const INLINE_FIELDS = ["architecture", "d_model", "n_layers", "n_decoder_layers", "n_heads", "n_kv_heads", "d_mlp", "pos_encoding", "norm", "norm_placement", "activation", "bias", "sliding_window"];
const HEAD_DIMS = ["head", "kv_head"];
const POS_DIMS = ["pos", "q_pos", "k_pos"];

/** The model's shape as a from-scratch config (random weights, seed 0). */
export function inlineOf(info) {
  const cfg = Object.fromEntries(INLINE_FIELDS.map((k) => [k, info.config[k]]).filter(([, v]) => v !== undefined));
  return { ...cfg, seed: 0 };
}

/** The same config with one setting changed. */
export function changedConfig(base, setting, value) {
  const out = { ...base };
  if (setting === "n_heads" || setting === "d_head") {
    out.n_heads = setting === "n_heads" ? Number(value) : Math.max(1, Math.round(base.d_model / Number(value)));
    out.n_kv_heads = null;
  } else if (setting === "sliding_window") out.sliding_window = value === "none" ? null : Number(value);
  else out[setting] = value;
  return out;
}

/** A side's described stages ({name, dims, stack, layer, site, hook, ...}) and head count: a registered model
 * from GET /api/models/{name}; a from-scratch config from POST /api/stages. */
export async function sideInfo(choice) {
  if (choice.model) {
    const info = await api.model(choice.model);
    return { stages: info.stages, nHeads: info.n_heads, nLayers: info.n_layers, architecture: info.architecture };
  }
  const cfg = choice.config;
  const stages = await api.modelStages({ config: cfg });
  return { stages, nHeads: cfg.n_heads, nLayers: cfg.n_layers, architecture: cfg.architecture };
}

/** Stage names both sides record, in the first side's order. */
export function commonStages(a, b) {
  const other = new Set(b.stages.map((x) => x.name));
  return a.stages.filter((x) => other.has(x.name));
}

export function hasHead(dims) {
  return dims.some((d) => HEAD_DIMS.includes(d));
}

/** What a side draws of one stage: {kind: "heatmap"|"line", z|y, rowDim, colDim, dims, shape} (the head
 * dimension is already cut to one head by the request, so it is left out). */
export function sliceOf(tensor) {
  const keep = tensor.dims.map((d, i) => [d, tensor.shape[i]]).filter(([d]) => !HEAD_DIMS.includes(d));
  const fixed = Object.fromEntries(tensor.dims.map((d) => [d, 0]));
  const dims = keep.map(([d]) => d);
  const shape = keep.map(([, n]) => n);
  if (dims.length >= 2) return { kind: "heatmap", z: tensor.matrix(dims[0], dims[1], fixed), rowDim: dims[0], colDim: dims[1], dims, shape };
  return { kind: "line", y: tensor.vector(dims[0], fixed), colDim: dims[0], dims, shape };
}

export function isPos(dim) {
  return POS_DIMS.includes(dim);
}

function values(slice) {
  return slice.kind === "heatmap" ? slice.z.flat() : slice.y;
}

/** One colour scale for both sides: symmetric around 0 when any value is negative, else 0..max. */
export function sharedScale(slices) {
  let lo = 0;
  let hi = 0;
  for (const v of slices.flatMap(values)) {
    if (v === null || !Number.isFinite(v)) continue;
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const m = Math.max(-lo, hi) || 1;
  return lo < 0 ? { signed: true, zmin: -m, zmax: m } : { signed: false, zmin: 0, zmax: hi || 1 };
}

/** A dimension in a learner's words: "query position" for q_pos (compare_dim_<dim>). */
export function dimLabel(dim, say) {
  return say(`compare_dim_${dim}`);
}

/** "head dimension: 16 ≠ 64" for each dimension whose size (or presence) differs; "" when the shapes match. */
export function shapeDiff(a, b, say) {
  const size = (s, d) => (s.dims.includes(d) ? String(s.shape[s.dims.indexOf(d)]) : "–");
  const names = [...new Set([...a.dims, ...b.dims])];
  const diff = names.filter((d) => size(a, d) !== size(b, d)).map((d) => `${dimLabel(d, say)}: ${size(a, d)} ≠ ${size(b, d)}`);
  const words = (s) => s.dims.map((d) => dimLabel(d, say)).join(" × ");
  if (!diff.length && a.dims.join() !== b.dims.join()) diff.push(`${words(a)} ≠ ${words(b)}`);
  return diff.join(", ");
}

// The norms the menu has words for (compare_norm_<site>); another norm's stages keep their names
const NORMS = ["ln1", "ln2", "ln_cross", "ln_final", "ln_embed"];

/** What a described stage holds, in a learner's words: "layer 3 · attention weights (softmax)" (its stack, layer,
 *  site and hook, from the server's description; the name stays in the URL and the requests); else its name. */
export function stageLabel(stage, say) {
  const { stack, layer, site, hook } = stage;
  let what;
  if (NORMS.includes(site)) what = say(`compare_what_norm_${hook}`, { norm: say(`compare_norm_${site}`) });
  else if (site === "mlp") what = say(`compare_what_mlp_${hook}`);
  else if (site === "cross_attn") what = say("compare_cross", { what: say(`compare_what_${hook}`) });
  else if (site === null || site === "attn") what = say(`compare_what_${hook}`);
  else return stage.name;
  const stackWords = say(`compare_stack_${stack || "none"}`);
  const where = layer === null ? (stackWords ? say("compare_where_top", { stack: stackWords.replace(/ · $/, "") }) : say("compare_where_model"))
    : say("compare_where_layer", { stack: stackWords, layer });
  return `${where} · ${what}`;
}

/** The largest |a − b| over matching cells (shapes equal). */
export function maxDifference(a, b) {
  const va = values(a);
  const vb = values(b);
  let m = 0;
  for (let i = 0; i < va.length; i += 1) if (va[i] !== null && vb[i] !== null) m = Math.max(m, Math.abs(va[i] - vb[i]));
  return m;
}
