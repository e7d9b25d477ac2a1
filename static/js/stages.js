// The stepper's stage list, built from the model's own trace names (so Pre-LN and Post-LN,
// RoPE, SwiGLU, cross-attention ... each get the order the forward pass really has).

const TOP = [
  [/^hook_tokens$/, "tokens", true],
  [/^hook_embed$/, "embed", true],
  [/^hook_token_type_embed$/, "embed", false],
  [/^hook_pos_embed$/, "pos", true],
  [/^ln_embed\.hook_normalized$/, "embed_norm", true],
  [/^ln_embed\./, "embed_norm", false],
  [/^ln_final\.hook_normalized$/, "ln_final", true],
  [/^ln_final\./, "ln_final", false],
  [/^hook_logits_raw$/, "logits", false],
  [/^hook_logits$/, "logits", true],
];

const BLOCK = [
  [/^hook_resid_pre$/, null, false],
  [/^(ln1|ln2|ln_cross)\.hook_normalized$/, (m) => m[1], true],
  [/^(ln1|ln2)_post\.hook_normalized$/, "post_norm", true],
  [/^(ln1|ln2)_post\./, "post_norm", false],
  [/^(ln1|ln2|ln_cross)\./, (m) => m[1], false],
  [/^attn\.hook_q$/, "qkv", true],
  [/^attn\.hook_[kv]$/, "qkv", false],
  [/^attn\.hook_norm_q$/, "qk_norm", true],
  [/^attn\.hook_norm_k$/, "qk_norm", false],
  [/^attn\.hook_rot_q$/, "rope", true],
  [/^attn\.hook_rot_k$/, "rope", false],
  [/^attn\.hook_scores_raw$/, "scores", true],
  [/^attn\.hook_scores_scaled$/, "scale", true],
  [/^attn\.hook_scores_capped$/, "softcap", true],
  [/^attn\.hook_attn_scores$/, "mask", true],
  [/^attn\.hook_pattern$/, "softmax", true],
  [/^attn\.hook_z$/, "z", true],
  [/^hook_attn_out$/, "attn_out", true],
  [/^hook_resid_mid_unnormed$/, "resid_mid", true],
  [/^hook_resid_mid$/, "resid_mid", true],
  [/^cross_attn\.hook_q$/, "cross_qkv", true],
  [/^cross_attn\.hook_[kv]$/, "cross_qkv", false],
  [/^cross_attn\.hook_scores_raw$/, "cross_scores", true],
  [/^cross_attn\.hook_scores_scaled$/, "cross_scale", true],
  [/^cross_attn\.hook_attn_scores$/, "cross_mask", true],
  [/^cross_attn\.hook_pattern$/, "cross_softmax", true],
  [/^cross_attn\.hook_z$/, "cross_z", true],
  [/^hook_cross_attn_out$/, "cross_out", true],
  [/^hook_resid_cross_unnormed$/, "resid_cross", true],
  [/^hook_resid_cross$/, "resid_cross", true],
  [/^mlp\.hook_pre$/, "ffn_in", true],
  [/^mlp\.hook_(gate|up)$/, "ffn_in", false],
  [/^mlp\.hook_post$/, "ffn_act", true],
  [/^hook_mlp_out$/, "ffn_out", true],
  [/^hook_resid_post_unnormed$/, "resid_post", true],
  [/^hook_resid_post$/, "resid_post", true],
];

/** Which panel draws a step. */
export const PANEL_OF = {
  tokens: "tokens",
  embed: "vectors",
  embed_norm: "norm",
  pos: "positional",
  ln1: "norm",
  ln2: "norm",
  ln_cross: "norm",
  ln_final: "norm",
  post_norm: "norm",
  softcap: "attention",
  qkv: "qkv",
  qk_norm: "qkv",
  rope: "qkv",
  cross_qkv: "qkv",
  scores: "attention",
  scale: "attention",
  mask: "attention",
  softmax: "attention",
  cross_scores: "attention",
  cross_scale: "attention",
  cross_mask: "attention",
  cross_softmax: "attention",
  z: "qkv",
  cross_z: "qkv",
  attn_out: "vectors",
  cross_out: "vectors",
  resid_mid: "vectors",
  resid_cross: "vectors",
  ffn_in: "ffn",
  ffn_act: "ffn",
  ffn_out: "vectors",
  resid_post: "vectors",
  logits: "logits",
};

function classify(table, local) {
  for (const [pattern, key, main] of table) {
    const m = local.match(pattern);
    if (m) return { key: typeof key === "function" ? key(m) : key, main };
  }
  return null;
}

/** Normalise the model's `stages` (list of names, of {name, dims}, or a name -> dims map). */
export function stageEntries(info) {
  const raw = info.stages || [];
  if (Array.isArray(raw)) {
    return raw.map((s) => (typeof s === "string" ? { name: s, dims: [] } : { name: s.name, dims: s.dims || [] }));
  }
  return Object.entries(raw).map(([name, dims]) => ({ name, dims: Array.isArray(dims) ? dims : dims.dims || [] }));
}

/**
 * Build the plan: sections (stack × pre/blocks/post), step definitions and the flat order.
 * A block step's names carry `{L}` for the layer.
 */
export function buildPlan(info) {
  const entries = stageEntries(info);
  const dims = {};
  const steps = new Map(); // id -> step
  const sections = [];
  const layersOf = {}; // stack -> Set of layer numbers
  const sectionOf = (stack, phase) => {
    let section = sections.find((s) => s.stack === stack && s.phase === phase);
    if (!section) {
      section = { stack, phase, steps: [] };
      sections.push(section);
    }
    return section;
  };

  for (const { name, dims: d } of entries) {
    dims[name] = d;
    let rest = name;
    let stack = "";
    const prefix = name.match(/^(encoder|decoder)\./);
    if (prefix) {
      stack = prefix[1];
      rest = name.slice(prefix[0].length);
    }
    const block = rest.match(/^blocks\.(\d+)\.(.*)$/);
    let found;
    let template;
    let phase;
    if (block) {
      (layersOf[stack] ||= new Set()).add(Number(block[1]));
      found = classify(BLOCK, block[2]);
      template = `${stack ? `${stack}.` : ""}blocks.{L}.${block[2]}`;
      phase = "blocks";
    } else {
      found = classify(TOP, rest);
      template = name;
      phase = layersOf[stack] && layersOf[stack].size ? "post" : "pre";
    }
    if (!found || !found.key) continue;
    const id = `${stack ? `${stack}.` : ""}${found.key}`;
    let step = steps.get(id);
    if (!step) {
      step = { id, key: found.key, stack, block: Boolean(block), main: null, extras: [], panel: PANEL_OF[found.key] };
      steps.set(id, step);
      sectionOf(stack, phase).steps.push(step);
    }
    if (found.main && !step.main) step.main = template;
    else if (!step.extras.includes(template) && step.main !== template) step.extras.push(template);

    // Position enters through Q and K (RoPE) or the scores (ALiBi): still give it a stop.
    if (!block && found.key === "embed" && !entries.some((e) => e.name === `${stack ? `${stack}.` : ""}hook_pos_embed`)) {
      const posId = `${stack ? `${stack}.` : ""}pos`;
      if (!steps.has(posId)) {
        const pos = { id: posId, key: "pos", stack, block: false, main: null, extras: [], panel: "positional" };
        steps.set(posId, pos);
        sectionOf(stack, phase).steps.push(pos);
      }
    }
  }
  // Post-LN: the step 'resid_mid' shows the un-normed sum; the normed copy is the norm's output.
  for (const step of steps.values()) if (!step.main && step.extras.length) step.main = step.extras.shift();

  const layers = {};
  for (const [stack, set] of Object.entries(layersOf)) layers[stack] = [...set].sort((a, b) => a - b);

  const order = [];
  for (const section of sections) {
    if (section.phase === "blocks") {
      for (const layer of layers[section.stack] || []) {
        for (const step of section.steps) order.push({ id: step.id, layer });
      }
    } else {
      for (const step of section.steps) order.push({ id: step.id, layer: null });
    }
  }
  return { steps, sections, layers, order, dims };
}

/** Resolve a step's tensor names for one layer. */
export function namesFor(step, layer) {
  const fill = (t) => t.replace("{L}", String(layer));
  return { main: step.main ? fill(step.main) : null, extras: step.extras.map(fill) };
}

/** Index in plan.order for (stage id, layer); falls back to the closest sensible spot. */
export function indexOf(plan, id, layer) {
  let index = plan.order.findIndex((o) => o.id === id && (o.layer === null || o.layer === layer));
  if (index < 0) index = plan.order.findIndex((o) => o.id === id);
  if (index < 0 && id) {
    // another model: "softmax" <-> "encoder.softmax" / "decoder.softmax", same stop, first stack that has it
    const key = id.replace(/^(encoder|decoder)\./, "");
    const same = (o) => o.id === key || o.id.endsWith(`.${key}`);
    index = plan.order.findIndex((o) => same(o) && (o.layer === null || o.layer === layer));
    if (index < 0) index = plan.order.findIndex(same);
  }
  return index < 0 ? 0 : index;
}
