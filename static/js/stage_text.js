// Which entries of the text file make up a stage's title, short name, formula and explanation
// for one model. Only the choice lives here (which key, in which order); the words are in
// static/text/<lang>.json, and the numbers are {placeholders} filled from the model (context.js).
//
// `m` (the model's choices): norm ("rmsnorm" | "layernorm"), placement ("pre" | "post"),
// pos (positional kind), act (activation), arch, causal, tied, last (the last block), scaled
// (√d_model embedding scaling), window (sliding window), bias, mlpBias (the FFN's own), kv ("mha" | "gqa" | "mqa"),
// ropeScaled (RoPE slowed pair by pair: Llama 3.1's scaling, or linear), queryScale (scores ÷ √ of a number other
// than d_head: Gemma), logitCap (soft-capped logits: Gemma 2), localGlobal (local and global layers: Gemma),
// vNorm (each head's v normed too: Gemma 4), ropeProportional (Gemma 4's global layers turn only some pairs),
// nope (layers without positions: SmolLM3), moe (this layer's FFN a mixture of experts), renorm (its chosen
// weights divided by their sum: Qwen3-MoE), shared (a shared expert beside the routed ones: Qwen3.5-MoE) and beside
// (the experts beside the FFN: Gemma 4's MoE block).

export const STAGE_FIELDS = ["title", "short", "formula", "explain"];

// the elementwise functions that have a formula; a gated FFN (model/config.py: GATED_ACTIVATIONS) names
// the function on its gate: SwiGLU → silu, GeGLU → gelu / gelu_tanh, ReGLU → relu
const ACTIVATIONS = ["relu", "gelu", "gelu_tanh", "silu"];
export const GATES = Object.freeze({ swiglu: "silu", geglu: "gelu", geglu_tanh: "gelu_tanh", reglu: "relu" });
export const GLU_NAMES = Object.freeze({ swiglu: "SwiGLU", geglu: "GeGLU", geglu_tanh: "GeGLU", reglu: "ReGLU" });
export const FN_NAMES = Object.freeze({ silu: "SiLU", gelu: "GELU", gelu_tanh: "GELU", relu: "ReLU" });
const gated = (m) => m.act in GATES;
const ffnBias = (m) => (m.mlpBias ? "bias" : "nobias");

const post = (m) => m.placement === "post";
const when = (yes, key) => (yes ? [key] : []);
const normFormula = (m) => [m.norm === "rmsnorm" ? "norm.formula.rms" : "norm.formula.layer"];
const placement = (m) => (post(m) ? "norm.placement.post" : "norm.placement.pre");
const titleByPlacement = (key) => (m) => [`${key}.title.${post(m) ? "post" : "pre"}`];

const normKind = (m) => (m.norm === "rmsnorm" ? "norm.explain.rms" : "norm.explain.layer");
const normChart = (m) => (m.norm === "rmsnorm" ? "norm.chart.rms" : "norm.chart.layer");
const normAgain = (m) => (m.norm === "rmsnorm" ? "norm.again.rms" : "norm.again.layer");
const byPlacement = (stage, field) => (m) => [`${stage}.${field}.${post(m) ? "post" : "pre"}`];
// the decoder stack of an encoder-decoder: self-attention, cross-attention and the FFN in each block
const withCross = (m) => m.arch === "encoder-decoder" && m.causal;
const multi = (m) => (m.kv === "mha" ? "mha" : m.kv);

const CHOICES = {
  embed: {
    formula: (m) => [m.scaled ? "embed.formula.scaled" : "embed.formula"],
    explain: (m) => ["embed.explain", ...when(m.scaled, m.rotary ? "embed.explain.scaled_rope" : "embed.explain.scaled")],
  },
  embed_norm: { formula: normFormula, explain: (m) => ["embed_norm.explain", normKind(m)] },
  pos: {
    // every kind of the server's registry (model/positional.py) has its texts (tests/app/test_positional_registry.py)
    formula: (m) => [
      `pos.formula.${m.pos}${m.scoreBias && m.causal ? ".causal" : ""}`,
      ...when(m.ropeScaled, "pos.formula.scaled"),
      ...when(m.ropePartial, "pos.formula.partial"),
      ...when(m.longrope, "pos.formula.longrope"),
    ],
    explain: (m) => [
      "pos.explain",
      `pos.explain.${m.pos}`,
      ...when(m.ropeScaled && !m.longrope && !m.ropeProportional, "pos.explain.scaled"),
      ...when(m.ropeProportional, "pos.explain.proportional"),
      ...when(m.ropePartial, "pos.explain.partial"),
      ...when(m.longrope, "pos.explain.longrope"),
      ...when(m.nope, "pos.explain.nope"),
    ],
  },
  rope: {
    explain: (m) => [
      "rope.explain",
      ...when(m.ropeScaled && !m.longrope && !m.ropeProportional, "rope.explain.scaled"),
      ...when(m.ropeProportional, "rope.explain.proportional"),
      ...when(m.ropePartial, "rope.explain.partial"),
      ...when(m.longrope, `rope.explain.longrope.${m.longrope}`),
      ...when(m.nope, "rope.explain.nope"),
    ],
  },
  ln1: { title: titleByPlacement("ln1"), formula: normFormula, explain: (m) => ["ln1.explain", normKind(m), normChart(m), placement(m)] },
  ln2: {
    title: titleByPlacement("ln2"),
    formula: normFormula,
    explain: (m) => [...when(m.arch === "decoder" && !post(m), "ln2.explain.decoder"), normAgain(m), normChart(m), placement(m)],
  },
  ln_cross: { title: titleByPlacement("ln_cross"), formula: normFormula, explain: (m) => [`ln_cross.explain.${post(m) ? "post" : "pre"}`, normAgain(m), normChart(m), placement(m)] },
  ln_final: { formula: normFormula, explain: (m) => ["ln_final.explain", normKind(m)] },
  qkv: {
    formula: (m) => [m.kv === "mha" ? "qkv.formula" : "qkv.formula.shared"],
    explain: (m) => ["qkv.explain", ...when(m.kv !== "mha", `qkv.explain.${m.kv}`)],
  },
  scale: {
    // a bias kind adds its bias right after the division: its own formula and sentence (scale.*.<kind>)
    formula: (m) => [m.scoreBias ? `scale.formula.${m.pos}` : m.queryScale ? "scale.formula.query" : "scale.formula"],
    explain: (m) => ["scale.explain", ...when(m.scoreBias, `scale.explain.${m.pos}`), ...when(m.queryScale, "scale.explain.query")],
  },
  mask: {
    formula: (m) => [`mask.formula.${m.causal ? "causal" : "bidirectional"}`, ...when(m.window, "mask.formula.window")],
    explain: (m) => [
      `mask.explain.${m.causal ? "causal" : "bidirectional"}`,
      ...when(m.window, "mask.explain.window"),
      ...when(m.localGlobal, m.window ? "mask.explain.local" : "mask.explain.global"),
    ],
  },
  attn_out: { explain: (m) => [`attn_out.explain.${multi(m) === "mha" ? "mha" : "shared"}`, "attn_out.explain.heads"] },
  resid_mid: { formula: byPlacement("resid_mid", "formula"), explain: byPlacement("resid_mid", "explain") },
  resid_cross: { formula: byPlacement("resid_cross", "formula") },
  ffn_in: {
    formula: (m) => [gated(m) ? `ffn_in.formula.gated_${ffnBias(m)}` : m.mlpBias ? "ffn_in.formula.linear" : "ffn_in.formula.linear_nobias"],
    explain: (m) => ["ffn_in.explain", gated(m) ? "ffn_in.explain.gated" : "ffn_in.explain.width"],
  },
  ffn_act: {
    formula: (m) => {
      const fn = gated(m) ? GATES[m.act] : m.act;
      return [...when(gated(m), "ffn_act.formula.gated"), `ffn_act.formula.${ACTIVATIONS.includes(fn) ? fn : "other"}`];
    },
  },
  ffn_out: { formula: (m) => [m.beside ? "ffn_out.formula.moe_beside" : m.moe ? (m.shared ? "ffn_out.formula.moe_shared" : "ffn_out.formula.moe") : gated(m) ? `ffn_out.formula.gated_${ffnBias(m)}` : `ffn_out.formula.${ffnBias(m)}`] },
  // a mixture of experts (Qwen3-MoE): the chosen weights divided by their sum, or not; a shared expert or none
  // Gemma 4: experts beside the FFN, a router of its own (its norm and scales)
  router: {
    formula: (m) => (m.beside ? ["router.formula.beside"]
      : [m.renorm ? "router.formula.renorm" : "router.formula", ...when(m.shared, "router.formula.shared")]),
    explain: (m) => (m.beside ? ["router.explain.beside"] : ["router.explain", m.renorm ? "router.explain.renorm"
      : "router.explain.raw", m.shared ? "router.explain.shared" : "router.explain.no_shared"]),
  },
  resid_post: {
    formula: byPlacement("resid_post", "formula"),
    explain: (m) => [
      withCross(m) ? "resid_post.explain.three" : "resid_post.explain.two",
      `resid_post.explain.${post(m) ? "post_" : ""}${m.last ? "last" : "next"}`,
    ],
  },
  qk_norm: { explain: (m) => ["qk_norm.explain", ...when(m.vNorm, "qk_norm.explain.v")] },
  logits: {
    formula: (m) => ["logits.formula", ...when(m.logitCap, "logits.formula.capped")],
    explain: (m) => ["logits.explain", ...when(m.tied, "logits.explain.tied"), ...when(m.logitCap, "logits.explain.capped")],
  },
};

/** The text keys, in order, that make up `field` of stage `key` for model choices `m`. */
export function stageKeys(key, field, m) {
  const choose = CHOICES[key] && CHOICES[key][field];
  return choose ? choose(m) : [`${key}.${field}`];
}
