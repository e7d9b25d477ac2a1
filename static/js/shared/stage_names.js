// A model's stages as the server describes them (GET /api/models/{name} `stages`, written by
// app/stage_descriptions.py): each with its name, stack, layer, site, hook, step, panel kind and dims. The page
// finds a stage here by what it is and never writes or reads a name: model/hooks.py's stage_name() writes them.

/**
 * The name of the stage `hook` at `site` (attn, cross_attn, mlp, ln1, ...; null: none) of layer `layer`
 * (null: outside the blocks) in stack `stack` (null: a model's one stack), or null when the model has none:
 * findStage(info, { hook: "pattern", site: "attn", layer: 1 }) is layer 1's attention weights.
 */
export function findStage(info, { hook, site = null, layer = null, stack = null }) {
  const row = (info.stages || []).find((r) => r.hook === hook && r.site === site && r.layer === layer && (r.stack ?? null) === stack);
  return row ? row.name : null;
}

/** One attention layer's stage (`hook`: q, k, v, scores_raw, attn_scores, pattern, z, ...), or null. */
export function attentionStage(info, hook, layer, { stack = null, cross = false } = {}) {
  return findStage(info, { hook, site: cross ? "cross_attn" : "attn", layer, stack });
}

/** The masked scores beside attention weights `name` (their −∞ cells are the hidden ones), or null for any other stage. */
export function maskOf(info, name) {
  const row = describedStage(info, name);
  return row && row.hook === "pattern" ? findStage(info, { hook: "attn_scores", site: row.site, layer: row.layer, stack: row.stack ?? null }) : null;
}

/** What stage `name` is ({stack, layer, site, hook, step, kind, dims, ...}), or null when the model has no such stage. */
export function describedStage(info, name) {
  return (info.stages || []).find((r) => r.name === name) || null;
}

/** The stack whose self-attention reads the sentence: an encoder-decoder's encoder, else the model's one (null). */
export function sentenceStackName(info) {
  return info.architecture === "encoder-decoder" ? "encoder" : null;
}
