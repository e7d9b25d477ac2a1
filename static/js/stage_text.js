// Which entries of the text file make up a stage's title, short name, formula and explanation
// for one model. Only the choice lives here (which key, in which order); the words are in
// static/text/<lang>.json, and the numbers are {placeholders} filled from the model (context.js).
//
// `m` (the model's choices): norm ("rmsnorm" | "layernorm"), placement ("pre" | "post"),
// pos (positional kind), act (activation), arch, causal, tied, last (the last block).

export const STAGE_FIELDS = ["title", "short", "formula", "explain"];

const POS_KINDS = ["sinusoidal", "learned", "rope", "alibi", "none"];
const ACTIVATIONS = ["relu", "gelu", "gelu_tanh", "swiglu"];

const post = (m) => m.placement === "post";
const when = (yes, key) => (yes ? [key] : []);
const normFormula = (m) => [m.norm === "rmsnorm" ? "norm.formula.rms" : "norm.formula.layer"];
const placement = (m) => (post(m) ? "norm.placement.post" : "norm.placement.pre");
const titleByPlacement = (key) => (m) => [`${key}.title.${post(m) ? "post" : "pre"}`];

const CHOICES = {
  embed_norm: { formula: normFormula },
  pos: {
    formula: (m) => when(POS_KINDS.includes(m.pos), `pos.formula.${m.pos}`),
    explain: (m) => ["pos.explain", ...when(POS_KINDS.includes(m.pos), `pos.explain.${m.pos}`)],
  },
  ln1: { title: titleByPlacement("ln1"), formula: normFormula, explain: (m) => ["ln1.explain", placement(m)] },
  ln2: {
    title: titleByPlacement("ln2"),
    formula: normFormula,
    explain: (m) => [...when(m.arch === "decoder" && !post(m), "ln2.explain.decoder"), "ln2.explain", placement(m)],
  },
  ln_cross: { title: titleByPlacement("ln_cross"), formula: normFormula, explain: (m) => ["ln_cross.explain", placement(m)] },
  ln_final: { formula: normFormula },
  scale: { explain: (m) => ["scale.explain", ...when(m.pos === "alibi", "scale.explain.alibi")] },
  mask: {
    formula: (m) => [`mask.formula.${m.causal ? "causal" : "bidirectional"}`],
    explain: (m) => [`mask.explain.${m.causal ? "causal" : "bidirectional"}`],
  },
  resid_mid: { explain: (m) => ["resid_mid.explain", ...when(post(m), "resid_mid.explain.post")] },
  ffn_in: { formula: (m) => [`ffn_in.formula.${m.act === "swiglu" ? "swiglu" : "linear"}`] },
  ffn_act: { formula: (m) => [`ffn_act.formula.${ACTIVATIONS.includes(m.act) ? m.act : "other"}`] },
  resid_post: {
    explain: (m) => ["resid_post.explain", m.last ? "resid_post.explain.last" : "resid_post.explain.next", ...when(post(m), "resid_post.explain.post")],
  },
  logits: { explain: (m) => ["logits.explain", ...when(m.tied, "logits.explain.tied")] },
};

/** The text keys, in order, that make up `field` of stage `key` for model choices `m`. */
export function stageKeys(key, field, m) {
  const choose = CHOICES[key] && CHOICES[key][field];
  return choose ? choose(m) : [`${key}.${field}`];
}
