// What one view needs, derived from the state: the request body, the panel context (ctx) and
// the numbers the explanations state. Pure functions of the state; nothing here is stored.

import { PANELS } from "./panels/index.js";
import { PARAM_VARS, trim } from "./params.js";
import { FN_NAMES, GATES, GLU_NAMES, stageKeys, STAGE_FIELDS } from "./stage_text.js";
import { namesFor } from "./stages.js";
import { activeAt } from "./intervene.js";
import { attentionLayers, hasChatTemplate } from "./shared/model_menu.js";
import { headLabel as probeLabel, sentenceLang } from "./probes.js";

/**
 * Every {placeholder} the stage explanations may use, and where its value comes from: the model
 * (GET /api/models/{name}) or this trace's tokens. A translator can use any of these names.
 */
const STAGE_VARS = {
  ...PARAM_VARS,
  tokenizer: (info) => ({ bpe: "BPE", wordpiece: "WordPiece" })[info.tokenizer] ?? info.tokenizer, // names, not config values
  d_vocab: (info) => info.vocab_size,
  n_tokens: (info, tokens) => tokens.length,
  n_layers: (info) => info.n_layers,
  d_model: (info) => info.config.d_model,
  n_heads: (info) => info.n_heads,
  d_head: (info) => info.d_head,
  sqrt_d_head: (info) => Math.sqrt(info.d_head).toFixed(2),
  n_kv: (info) => info.n_kv_heads,
  d_mlp: (info) => info.config.d_mlp || 4 * info.config.d_model,
  mlp_ratio: (info) => trim((info.config.d_mlp || 4 * info.config.d_model) / info.config.d_model),
  n_ctx: (info) => info.config.n_ctx,
  sqrt_d_model: (info) => Math.sqrt(info.config.d_model).toFixed(2),
  d_q: (info) => info.n_heads * info.d_head,
  d_kv: (info) => info.n_kv_heads * info.d_head,
  group: (info) => info.n_heads / info.n_kv_heads,
  rope_base: (info) => info.config.rope_base,
  // rotate-half over the turned dimensions: dimension i turns with i + rope_dims/2 (model/positional.py);
  // rope_dims is d_head unless the model turns only part of each head (partial rotary: Phi-4-mini)
  rope_half: (info) => turned(info) / 2,
  rope_last: (info) => turned(info) / 2 - 1,
  d_head_last: (info) => info.d_head - 1,
  rope_dims: (info) => turned(info),
  rope_dims_last: (info) => turned(info) - 1,
  rope_pass: (info) => info.d_head - turned(info),
  // longrope (Phi-3): the length where the long factors take over, and the factor on the turned dimensions
  rope_original: (info) => info.config.rope_original_context ?? "",
  rope_attention: (info) => trim(info.config.rope_attention_factor ?? 1),
  window: (info) => info.config.sliding_window ?? "",
  // a gated FFN's name and the function on its gate (SwiGLU: SiLU)
  glu: (info) => GLU_NAMES[info.config.activation] ?? "",
  gate_fn: (info) => FN_NAMES[GATES[info.config.activation]] ?? "",
  window_back: (info) => (info.config.sliding_window ? info.config.sliding_window - 1 : ""),
  // Gemma: soft caps, the query scale, local (sliding-window) and global layers and their RoPE bases
  attn_softcap: (info) => info.config.attn_softcap ?? "",
  logit_softcap: (info) => info.config.logit_softcap ?? "",
  score_scale_dim: (info) => info.config.score_scale_dim ?? info.d_head,
  sqrt_score_scale_dim: (info) => Math.sqrt(info.config.score_scale_dim ?? info.d_head).toFixed(2),
  layer: (info, tokens, at) => at.layer ?? 0,
  layer_rope_base: (info, tokens, at) => (isLocal(info.config, at.layer ?? 0) ? info.config.rope_base_local ?? info.config.rope_base : info.config.rope_base),
  local_layers: (info) => localLayers(info.config),
  global_layers: (info) => [...Array(info.n_layers).keys()].filter((i) => !isLocal(info.config, i)),
  // Gemma 4: the per-layer input's width, and the layer whose K and V this layer attends with
  d_pli: (info) => info.config.per_layer_input ?? "",
  kv_source: (info, tokens, at) => info.config.kv_source?.[at.layer ?? 0] ?? at.layer ?? 0,
  // SmolLM3's layers without positions; a mixture of experts (Qwen3-MoE)
  nope_layers: (info) => (info.config.nope_layers ?? []),
  n_experts: (info) => info.config.n_experts ?? "",
  n_experts_used: (info) => info.config.n_experts_used ?? "",
  expert_d_mlp: (info) => info.config.expert_d_mlp ?? info.config.d_mlp ?? "",
  shared_d_mlp: (info) => info.config.shared_expert_d_mlp ?? "", // Qwen3.5-MoE's shared expert
  // Qwen3.5: the gated DeltaNet layers (model/deltanet.py), their heads and widths, and the attention layers
  deltanet_layers: (info) => (info.config.deltanet_layers ?? []),
  attention_layers: (info) => attentionLayers(info),
  dn_key_heads: (info) => info.config.deltanet_key_heads ?? "",
  dn_heads: (info) => info.config.deltanet_value_heads ?? "",
  dn_group: (info) => (info.config.deltanet_value_heads ?? 0) / (info.config.deltanet_key_heads ?? 1),
  dn_d_key: (info) => info.config.deltanet_key_dim ?? "",
  dn_d_value: (info) => info.config.deltanet_value_dim ?? "",
  dn_conv: (info) => info.config.deltanet_conv ?? "",
  dn_conv_back: (info) => (info.config.deltanet_conv ?? 1) - 1,
  dn_state_numbers: (info) => (info.config.deltanet_value_heads ?? 0) * (info.config.deltanet_value_dim ?? 0) * (info.config.deltanet_key_dim ?? 0),
  kv_per_token: (info) => 2 * info.n_kv_heads * info.d_head,
};

/** Whether a layer's FFN is a mixture of experts (model/config.py: is_moe). */
export function isMoe(cfg, layer) {
  return Boolean(cfg.n_experts) && (cfg.moe_layers == null || cfg.moe_layers.includes(layer));
}

/** The layers a sliding window applies to (window_layers, or every layer), none without a window. */
function localLayers(cfg) {
  if (!cfg.sliding_window) return [];
  return cfg.window_layers ?? [...Array(cfg.n_layers).keys()];
}
function isLocal(cfg, layer) {
  return localLayers(cfg).includes(layer);
}

function turned(info) {
  return info.config.rope_dims ?? info.d_head;
}

/** `at`: {stack, layer} of the block the numbers are about (the first block when the stage has none); `list`
 *  writes a list (layer numbers) in the page's language (Texts.list: "0, 1" / "0、1"). */
export function stageVars(info, tokens, at, list) {
  return Object.fromEntries(Object.entries(STAGE_VARS).map(([name, get]) => {
    const value = get(info, tokens, at);
    return [name, Array.isArray(value) ? list(value) : value];
  }));
}

/**
 * The registry entry of the model's positional encoding (GET /api/positional-encoding/kinds): what it changes
 * (`where`: embedding, q_k, scores, nowhere) and whether it is `learned`. The page asks it, never the name.
 */
export function positionalKind(s) {
  const name = s.info.config.pos_encoding;
  return s.posKinds.find((kind) => kind.name === name) || { name, where: "nowhere", learned: false };
}

/** The model's choices that pick which sentences a stage's text is made of (see stage_text.js). */
export function stageChoices(s, step, at) {
  const cfg = s.info.config;
  const layers = s.plan.layers[step.stack] || [];
  return {
    norm: cfg.norm,
    placement: cfg.norm_placement,
    act: cfg.activation,
    pos: cfg.pos_encoding,
    scoreBias: positionalKind(s).where === "scores", // a bias kind (ALiBi): the scale stage adds its bias
    rotary: positionalKind(s).where === "q_k", // a rotary kind (RoPE): positions enter at q and k, not the embedding
    arch: s.info.architecture,
    causal: step.stack !== "encoder" && s.info.architecture !== "encoder",
    tied: Boolean(cfg.tied_embeddings && cfg.lm_head),
    last: at.layer !== null && at.layer === layers[layers.length - 1],
    scaled: Boolean(cfg.scale_embeddings),
    ropeScaled: Boolean(cfg.rope_freq_factors),
    // Gemma 4's proportional RoPE on its global layers: factors of 1e30 leave those pairs unturned
    ropeProportional: Boolean(cfg.rope_freq_factors && cfg.rope_freq_factors.some((f) => f >= 1e29)),
    window: isLocal(cfg, at.layer ?? 0),
    localGlobal: Boolean(cfg.sliding_window && cfg.window_layers),
    queryScale: cfg.score_scale_dim != null,
    logitCap: cfg.logit_softcap != null,
    vNorm: Boolean(cfg.v_norm), // Gemma 4: each head's v normed too
    ropePartial: Boolean(cfg.rope_dims && cfg.rope_dims !== s.info.d_head),
    // longrope: which factor set this text's length picks (the long one past the original context)
    longrope: cfg.rope_long_freq_factors ? ((s.tokens || []).length > cfg.rope_original_context ? "long" : "short") : null,
    bias: Boolean(cfg.bias),
    mlpBias: Boolean(cfg.mlp_bias ?? cfg.bias),
    kv: s.info.n_kv_heads === s.info.n_heads ? "mha" : s.info.n_kv_heads === 1 ? "mqa" : "gqa",
    nope: Boolean(cfg.nope_layers && cfg.nope_layers.length),
    moe: isMoe(cfg, at.layer ?? 0),
    renorm: Boolean(cfg.expert_norm_topk),
    shared: isMoe(cfg, at.layer ?? 0) && cfg.shared_expert_d_mlp != null,
    beside: isMoe(cfg, at.layer ?? 0) && Boolean(cfg.experts_beside_mlp), // Gemma 4's MoE block
  };
}

/** The body of /api/tokenize and /api/trace for a state. */
export function requestBody(s) {
  const body = { model: s.model, text: s.text };
  if (s.info && s.info.architecture === "encoder-decoder" && s.target) body.target_text = s.target;
  if (s.snapshot !== null && s.snapshot !== undefined) body.snapshot = s.snapshot;
  if (s.chat && hasChatTemplate(s.info)) body.chat = true;
  return body;
}

/** Training snapshots listed in a checkpoint's meta, oldest first. */
export function snapshotsOf(info) {
  const listed = info && info.meta && info.meta.snapshots;
  return Array.isArray(listed) ? listed.filter((x) => Number.isInteger(x.step)).sort((a, b) => a.step - b.step) : [];
}

/**
 * A stage's {title, short, formula, explain} in `texts`: `model` (stageChoices) picks the entries
 * (norm kind, placement, positional kind, ...: see stage_text.js); `vars` fills their numbers.
 */
export function stageWords(texts, key, model, vars) {
  const known = key || "unknown"; // every step the server describes has its texts (tests/test_recipes.py)
  const out = {};
  for (const field of STAGE_FIELDS) {
    const parts = stageKeys(known, field, model).map((k) => texts.entry("stages", k, vars));
    out[field] = parts.filter(Boolean).join(texts.separator);
  }
  return out;
}

/** What the checkpoint's head scores say about one self-attention head (probes.js), if anything. */
function headLabel(info, step, layer, head, lang) {
  if (layer === null || step.cross || !step.block) return null;
  return probeLabel(info, lang, { stack: step.stack || "", layer, head });
}

/** The context a panel loads and draws with, for state `s` (its texts already loaded). */
export function makeContext(s, go) {
  const at = s.plan.order[s.index];
  const step = s.plan.steps.get(at.id);
  const cfg = s.info.config;
  const encdec = s.info.architecture === "encoder-decoder";
  const onDecoder = encdec && step.stack !== "encoder";
  const toks = onDecoder ? s.targetTokens || [] : s.tokens;
  const panel = PANELS[step.panel];
  let view = s.view;
  if (!panel.hasHeads || (view === "layers" && !panel.hasLayers) || step.key === "pos" || !step.block) view = "head";
  const texts = s.texts[s.lang];
  const choices = stageChoices(s, step, at);
  const vars = stageVars(s.info, toks, { stack: step.stack, layer: at.layer }, texts.list);
  const stageText = (key) => stageWords(texts, key, choices, vars);
  const layerPart = at.layer === null ? "" : `_L${at.layer}`;
  return {
    model: s.model,
    info: s.info,
    cfg,
    posKind: positionalKind(s),
    plan: s.plan,
    step,
    panel,
    layer: at.layer,
    head: s.head,
    view,
    iv: activeAt(s, step),
    ivWindow: s.ivWindow,
    ivTemp: s.ivTemp,
    token: s.token,
    names: namesFor(step, at.layer ?? 0),
    tokens: toks,
    sourceTokens: s.tokens,
    targetTokens: s.targetTokens,
    req: requestBody(s),
    vars,
    texts,
    t: texts.t,
    stageText,
    text: stageText(step.key),
    fname: `${s.model}_${step.id}${layerPart}`,
    go,
    // real-text head scores are per language: the sentence's own, when the checkpoint measured it
    headLabel: (head) => headLabel(s.info, step, at.layer, head, sentenceLang(s.text)),
  };
}
