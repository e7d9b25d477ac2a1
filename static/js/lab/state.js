// The lab page's one state object and its form in the URL (the fields shared/page.js reads and
// writes). Only go() (lab/navigate.js) changes it. Each panel's controls are fields here, so a link
// reproduces the experiment on screen; `panel` names the one panel shown (/lab?panel=masks).

import { ALIASES, KINDS } from "../shared/interventions.js";

const int = (key, field, initial) => ({ key, field, kind: "int", initial });
const num = (key, field, initial) => ({ key, field, kind: "num", initial });
const str = (key, field, initial) => ({ key, field, kind: "str", initial });

/** The URL form of the state, in the order the parameters are written. */
export const FIELDS = [
  { ...str("panel", "panel", ""), always: true }, // the panel shown ("": the page's first)
  { ...str("model", "model", ""), always: true },
  { ...str("text", "text", "我爱北京天安门广场。"), always: true },
  { ...str("lang", "lang", "en"), always: true },
  str("dk", "dks", "4,8,16,32,64,128,256,512,1024"),
  int("w", "window", 3),
  int("ml", "maskLayer", 0),
  int("mh", "maskHead", 0),
  int("len", "length", 32),
  int("pair", "pair", 0),
  num("T", "temperature", 1),
  int("k", "topK", 0),
  num("p", "topP", 1),
  int("seed", "seed", 0),
  int("n", "draws", 20),
  { key: "iv", field: "toggles", kind: "list", values: KINDS, aliases: ALIASES, initial: "" }, // the interventions on
  int("ivw", "ivWindow", 2),
  num("ivt", "ivTemperature", 3),
  int("ivl", "layer", -1),
  int("ivh", "head", 0),
  int("abl", "ablateLayer", 0),
  str("vs", "variant", ""),
  str("set", "setting", "n_heads"),
  str("val", "value", "1"),
  str("cst", "cmpStage", ""), // the compare panel's stage (a trace name both sides record; "" = the attention pattern)
  int("cmh", "cmpHead", 0),
  int("cxn", "cxMax", 2048),
  int("cxh", "cxHeads", 1),
  int("fl", "flLayer", 0),
  int("fh", "flHead", 0),
  int("fbq", "flBq", 4),
  int("fbk", "flBk", 4),
  int("ft", "flTile", 0),
  int("kvc", "kvContext", 4096),
  int("kvb", "kvBatch", 1),
  str("kvd", "kvDtype", "float16"),
  int("gn", "genSteps", 12),
  int("nl", "nlLayers", 12),
  int("nd", "nlWidth", 64),
  int("ns", "nlSteps", 8),
  int("nseed", "nlSeed", 0),
  int("ap", "ablPos", -1),
  str("pem", "peModel", ""), // the positional-encoding family member the shuffle demo runs ("" = the lab's model or the first)
  int("pss", "peSeed", 0), // the demo's shuffle
  int("lal", "linLayer", 1), // the linear-attention panel's head (tiny-gpt's previous-token head: layer 1, head 0)
  int("lah", "linHead", 0),
  int("os", "objSeed", 0), // the objectives panel's masked positions
  int("hcl", "hcLayer", 0), // the head-count panel's layer
  int("afl", "flowLayer", 0), // the attention-flow panel's layer and head
  int("afh", "flowHead", 0),
];

export const SETTINGS = ["n_heads", "d_head", "pos_encoding", "norm_placement", "activation", "sliding_window"];

export const lab = {
  texts: {}, // language -> Texts (static/text/lab.<lang>.json)
  models: [],
  info: null, // GET /api/models/{model}
  tokens: [], // the sentence's tokens (POST /api/tokenize)
  data: null, // what the shown panel's load() returned, or {error}
  generation: 0, // counts go() calls; only the latest may commit
  ...Object.fromEntries(FIELDS.map(({ field, initial }) => [field, initial])),
};

/** The interventions switched on, as a list of kinds. */
export function toggledOn(s) {
  return s.toggles.split(",").filter(Boolean);
}

export function toggled(s, name) {
  return toggledOn(s).includes(name);
}

export function withToggle(s, name, on) {
  const set = new Set(toggledOn(s));
  if (on) set.add(name);
  else set.delete(name);
  return KINDS.filter((x) => set.has(x)).join(",");
}
