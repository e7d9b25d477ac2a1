// The page's one state object, and its form in the URL. Only go() (navigate.js) changes it:
// it builds the next state, loads what that view needs, and commits it whole.

import { CHAPTERS } from "./lessons.js";

export const state = {
  lang: "en",
  texts: {}, // language -> Texts (static/text/<lang>.json), loaded when first needed
  models: [],
  model: null,
  info: null, // GET /api/models/{model}
  plan: null, // the stepper's stages (stages.js)
  text: "",
  target: "",
  chat: false, // the sentence wrapped in the model's chat template (models that have one)
  tokens: [],
  targetTokens: null,
  index: 0,
  layer: 0,
  head: 0,
  view: "head",
  iv: null, // the intervention shown beside this stage (intervene.js KINDS), or null
  ivWindow: 2, // its W (window) and T (attention temperature)
  ivTemp: 2,
  token: null,
  present: false,
  snapshot: null, // a training step from meta.snapshots; null: the final weights
  chapter: null, // the lesson path's chapter (index into lessons.js CHAPTERS); null: free exploring
  sheet: null, // "params" | "arch": the parameters or architectures sheet above the stage
  explainOpen: false, // presentation mode: the explanation is shown (E toggles it)
  // for one view only (go() clears them):
  preview: null, // the training-progress slider while it is dragged (a position, not yet loaded)
  note: null, // a short confirmation to show: {key, link?}
  generation: 0, // counts go() calls; only the latest one may commit
};

const VIEWS = ["head", "heads", "layers"];
const SHEETS = ["params", "arch"];
const IV_KINDS = ["no_scale", "no_mask", "window", "temperature", "ablate", "reverse"];

/** The view a URL asks for (missing parameters are undefined). */
export function readURL() {
  const p = new URLSearchParams(location.search);
  const int = (key) => (p.has(key) && /^\d+$/.test(p.get(key)) ? Number(p.get(key)) : undefined);
  return {
    model: p.get("model") || undefined,
    text: p.has("text") ? p.get("text") : undefined,
    target: p.get("target") || "",
    chat: p.get("chat") === "1",
    stage: p.get("stage") || undefined,
    layer: int("layer"),
    head: int("head"),
    view: VIEWS.includes(p.get("view")) ? p.get("view") : "head",
    lang: p.get("lang") || undefined,
    present: p.get("present") === "1",
    // cmp=1: the older link to "softmax without ÷√d_k", now the no_scale intervention
    iv: IV_KINDS.includes(p.get("iv")) ? p.get("iv") : p.get("cmp") === "1" ? "no_scale" : null,
    ivWindow: int("ivw"),
    ivTemp: p.has("ivt") && Number(p.get("ivt")) > 0 ? Number(p.get("ivt")) : undefined,
    snapshot: int("snap") ?? null,
    chapter: p.get("chapter") || undefined,
    sheet: SHEETS.includes(p.get("sheet")) ? p.get("sheet") : null,
  };
}

/** The URL of a committed state (replaces the current history entry). */
export function writeURL(s) {
  const at = s.plan.order[s.index];
  const p = new URLSearchParams();
  p.set("model", s.model);
  p.set("text", s.text);
  if (s.target) p.set("target", s.target);
  if (s.chat) p.set("chat", "1");
  p.set("stage", at.id);
  if (at.layer !== null) p.set("layer", String(at.layer));
  p.set("head", String(s.head));
  if (s.view !== "head") p.set("view", s.view);
  p.set("lang", s.lang);
  if (s.present) p.set("present", "1");
  if (s.iv) p.set("iv", s.iv);
  if (s.iv === "window") p.set("ivw", String(s.ivWindow));
  if (s.iv === "temperature") p.set("ivt", String(s.ivTemp));
  if (s.snapshot !== null && s.snapshot !== undefined) p.set("snap", String(s.snapshot));
  if (s.chapter !== null && s.chapter !== undefined) p.set("chapter", CHAPTERS[s.chapter].id);
  if (s.sheet) p.set("sheet", s.sheet);
  history.replaceState(null, "", `${location.pathname}?${p}`);
}
