// Trace stage names, written as model/hooks.py's stage_name() writes them (TransformerLens's names, an
// encoder-decoder's stack in front). The page reads the names each model lists (GET /api/models/{name}
// `stages`); it builds one here only to ask the server for it. tests/app/test_stage_names_js.py keeps the two
// the same.

/** A layer's stages inside its attention, and inside its FFN (model/hooks.py: ATTENTION_STAGES, MLP_STAGES). */
export const ATTENTION_STAGES = ["q", "k", "v", "norm_q", "norm_k", "rot_q", "rot_k", "scores_raw", "scores_scaled", "scores_capped", "attn_scores", "pattern", "z"];
export const MLP_STAGES = ["pre", "gate", "up", "post"];

/** "" for a model's one stack (null), "encoder." or "decoder." for an encoder-decoder's. */
export function stackPrefix(stack) {
  return stack ? `${stack}.` : "";
}

/** "blocks.1.attn.", "decoder.blocks.0.cross_attn.": what one attention layer's stage names start with. */
export function attentionPrefix(stack, layer, cross = false) {
  return `${stackPrefix(stack)}blocks.${layer}.${cross ? "cross_attn" : "attn"}.`;
}

/**
 * One stage's trace name: stageName("pattern", 1) is "blocks.1.attn.hook_pattern",
 * stageName("pattern", 0, { stack: "decoder", cross: true }) "decoder.blocks.0.cross_attn.hook_pattern",
 * stageName("resid_post", 2) "blocks.2.hook_resid_post", stageName("embed", null, { stack: "encoder" })
 * "encoder.hook_embed", stageName("logits") "hook_logits".
 */
export function stageName(stage, layer = null, { stack = null, cross = false } = {}) {
  if (layer === null) return stage === "logits" || stage === "logits_raw" ? `hook_${stage}` : `${stackPrefix(stack)}hook_${stage}`;
  if (ATTENTION_STAGES.includes(stage)) return `${attentionPrefix(stack, layer, cross)}hook_${stage}`;
  return `${stackPrefix(stack)}blocks.${layer}.${MLP_STAGES.includes(stage) ? "mlp." : ""}hook_${stage}`;
}

/** The stack whose self-attention reads the sentence: an encoder-decoder's encoder, else the model's one (null). */
export function sentenceStackName(info) {
  return info.architecture === "encoder-decoder" ? "encoder" : null;
}
