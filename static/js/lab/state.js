// The lab page's one state object and its form in the URL. Only go() (go.js) changes it.
// Each panel's controls are fields here, so a link reproduces every experiment on the page.

/** URL key -> [state field, kind, default]. Kinds: int, num, str, bool, list (comma-separated words). */
export const FIELDS = Object.freeze({
  model: ["model", "str", ""],
  text: ["text", "str", "我爱北京天安门广场。"],
  lang: ["lang", "str", "en"],
  dk: ["dks", "str", "4,8,16,32,64,128,256,512,1024"],
  w: ["window", "int", 3],
  ml: ["maskLayer", "int", 0],
  mh: ["maskHead", "int", 0],
  len: ["length", "int", 32],
  pair: ["pair", "int", 0],
  T: ["temperature", "num", 1],
  k: ["topK", "int", 0],
  p: ["topP", "num", 1],
  seed: ["seed", "int", 0],
  n: ["draws", "int", 20],
  iv: ["toggles", "list", ""],
  ivw: ["ivWindow", "int", 2],
  ivt: ["ivTemperature", "num", 3],
  ivl: ["layer", "int", -1],
  ivh: ["head", "int", 0],
  abl: ["ablateLayer", "int", 0],
  vs: ["variant", "str", ""],
  set: ["setting", "str", "n_heads"],
  val: ["value", "str", "1"],
  cst: ["cmpStage", "str", ""], // the compare panel's stage (a trace name both sides record; "" = the attention pattern)
  cmh: ["cmpHead", "int", 0],
  cxn: ["cxMax", "int", 2048],
  cxh: ["cxHeads", "int", 1],
  fl: ["flLayer", "int", 0],
  fh: ["flHead", "int", 0],
  fbq: ["flBq", "int", 4],
  fbk: ["flBk", "int", 4],
  ft: ["flTile", "int", 0],
  kvc: ["kvContext", "int", 4096],
  kvb: ["kvBatch", "int", 1],
  kvd: ["kvDtype", "str", "float16"],
  gn: ["genSteps", "int", 12],
  nl: ["nlLayers", "int", 12],
  nd: ["nlWidth", "int", 64],
  ns: ["nlSteps", "int", 8],
  nseed: ["nlSeed", "int", 0],
  ap: ["ablPos", "int", -1],
  pem: ["peModel", "str", ""], // the positional-encoding family member the shuffle demo runs ("" = the lab's model or the first)
  pss: ["peSeed", "int", 0], // the demo's shuffle
  panel: ["panel", "str", ""], // the panel a link from the explorer or a lesson points at
});

export const TOGGLES = ["no_scale", "no_mask", "window", "temperature", "ablate", "shuffle"];
export const SETTINGS = ["n_heads", "d_head", "pos_encoding", "norm_placement", "activation", "sliding_window"];

export const lab = {
  texts: {}, // language -> Texts (static/text/lab.<lang>.json)
  models: [],
  info: null, // GET /api/models/{model}
  data: {}, // panel id -> what its load() returned (or {error})
  generation: 0, // counts go() calls; only the latest may commit
  ...Object.fromEntries(Object.values(FIELDS).map(([field, , initial]) => [field, initial])),
};

function parse(kind, raw, initial) {
  if (kind === "int") return /^-?\d+$/.test(raw) ? Number(raw) : initial;
  if (kind === "num") return Number.isFinite(Number(raw)) && raw !== "" ? Number(raw) : initial;
  if (kind === "list") return raw.split(",").filter((x) => TOGGLES.includes(x)).join(",");
  return raw;
}

/** The fields a URL sets (missing ones are left out). */
export function readURL() {
  const p = new URLSearchParams(location.search);
  const out = {};
  for (const [key, [field, kind, initial]] of Object.entries(FIELDS)) {
    if (p.has(key)) out[field] = parse(kind, p.get(key), initial);
  }
  return out;
}

/** The URL of a committed state: only fields that differ from their default. */
export function writeURL(s) {
  const p = new URLSearchParams();
  for (const [key, [field, , initial]] of Object.entries(FIELDS)) {
    if (key === "model" || key === "text" || key === "lang" || s[field] !== initial) p.set(key, String(s[field]));
  }
  history.replaceState(null, "", `${location.pathname}?${p}`);
}

export function toggled(s, name) {
  return s.toggles.split(",").includes(name);
}

export function withToggle(s, name, on) {
  const set = new Set(s.toggles.split(",").filter(Boolean));
  if (on) set.add(name);
  else set.delete(name);
  return TOGGLES.filter((x) => set.has(x)).join(",");
}
