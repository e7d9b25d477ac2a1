// Parameter counts, read from the model's own weight list (GET /api/models/{name} → weights:
// every weight once, name, shape, count). Every parameter number the page states comes from here.

/** A number with at most two decimals, no trailing zeros (2.5, 3, 2.67). */
export function trim(x) {
  return String(Number(Number(x).toFixed(2)));
}

/** 40960 → "40,960" (the same digits in both languages). */
export const count = (n) => (Number.isInteger(Number(n)) ? String(Number(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",") : Number(n).toLocaleString("en-US")); // integers without Intl (its first call costs tens of ms)

const percent = (part, whole) => (whole ? `${Math.round((100 * part) / whole)}` : "0");

/** The name prefix of one block's weights: "stack.blocks.0." or "encoder.blocks.1.". */
function blockPrefix(info, stack, layer) {
  const owner = stack || (info.architecture === "encoder-decoder" ? "encoder" : "stack");
  return `${owner}.blocks.${layer ?? 0}.`;
}

export function blockWeights(info, stack, layer) {
  const prefix = blockPrefix(info, stack, layer);
  return (info.weights || []).filter((w) => w.name.startsWith(prefix));
}

const sum = (list) => list.reduce((a, w) => a + w.count, 0);

/** One block's parameters by part: self-attention, cross-attention, FFN, norms, total. */
export function blockParts(info, stack, layer) {
  const ws = blockWeights(info, stack, layer);
  const attn = ws.filter((w) => w.name.includes(".attn.") && !w.name.includes(".cross_attn."));
  return {
    total: sum(ws),
    attn: sum(attn),
    cross: sum(ws.filter((w) => w.name.includes(".cross_attn."))),
    ffn: sum(ws.filter((w) => w.name.includes(".mlp."))),
    norms: sum(ws.filter((w) => /\.(ln1|ln2|ln_cross)\./.test(w.name))),
    ffnMatrices: ws.filter((w) => w.name.includes(".mlp.") && w.name.endsWith(".weight")).length,
    attnWeights: attn,
  };
}

/** What self-attention would cost with full multi-head K/V (every projection d_model × d_model). */
export function fullAttention(info) {
  const d = info.config.d_model;
  const qkvBias = info.config.qkv_bias ?? info.config.bias;
  return 4 * d * d + (qkvBias ? 3 * d : 0) + (info.config.bias ? d : 0);
}

/** The shape of a projection as the text writes it: x·W, so in × out (the weight is stored out × in). */
export function projShape(info, stack, layer, which) {
  const w = blockParts(info, stack, layer).attnWeights.find((x) => x.name.endsWith(`.attn.${which}.weight`));
  return w && w.shape.length === 2 ? `${w.shape[1]} × ${w.shape[0]}` : "";
}

/** {placeholders} about parameters (context.js merges them into STAGE_VARS). */
export const PARAM_VARS = {
  block_count: (info, _t, at) => count(blockParts(info, at.stack, at.layer).total),
  ffn_count: (info, _t, at) => count(blockParts(info, at.stack, at.layer).ffn),
  ffn_share: (info, _t, at) => {
    const p = blockParts(info, at.stack, at.layer);
    return percent(p.ffn, p.total);
  },
  ffn_matrices: (info, _t, at) => blockParts(info, at.stack, at.layer).ffnMatrices,
  attn_count: (info, _t, at) => count(blockParts(info, at.stack, at.layer).attn),
  attn_full: (info) => count(fullAttention(info)),
  kv_saving: (info, _t, at) => count(fullAttention(info) - blockParts(info, at.stack, at.layer).attn),
  wq_shape: (info, _t, at) => projShape(info, at.stack, at.layer, "W_Q"),
  wk_shape: (info, _t, at) => projShape(info, at.stack, at.layer, "W_K"),
  total_params: (info) => count(info.parameters ? info.parameters.total : 0),
  window_hidden: (info, tokens) => windowHidden(tokens.length, info.config.sliding_window),
};

/** Cells a sliding window of `w` hides beyond the causal mask on n tokens: keys i − j ≥ w, j ≤ i. */
export function windowHidden(n, w) {
  if (!w) return 0;
  let hidden = 0;
  for (let i = 0; i < n; i += 1) hidden += Math.max(0, i - w + 1);
  return hidden;
}

/** The parameters panel's numbers: per component (GET parameters) with shares of the total. */
export function componentShares(info) {
  const p = info.parameters || {};
  const total = p.total || 0;
  return Object.entries(p)
    .filter(([name, n]) => name !== "total" && name !== "active" && n > 0) // active: a part of the total, no component
    .map(([name, n]) => ({ name, count: n, share: total ? n / total : 0 }));
}
