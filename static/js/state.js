// The explorer's one state object, and its form in the URL (the fields shared/page.js reads and
// writes). Only go() (navigate.js, through shared/page.js) changes it: it builds the next state,
// loads what that view needs, and commits it whole.

import { CHAPTERS } from "./lessons.js";
import { ALIASES, KINDS } from "./shared/interventions.js";
import { readURL as readFields } from "./shared/page.js";

export const state = {
  lang: "en",
  texts: {}, // language -> Texts (static/text/<lang>.json), loaded when first needed
  models: [],
  refused: [], // GET /api/health `refused`: models found but not offered, each with why (greyed in the menu)
  loading: [], // GET /api/health `loading`: models still loading, with how far (greyed in the menu, updated)
  posKinds: [], // GET /api/positional-encoding/kinds: the server's registry, what each positional encoding changes
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
  iv: null, // the intervention shown beside this stage (shared/interventions.js KINDS), or null
  ivWindow: 2, // its W (window) and T (attention temperature)
  ivTemp: 2,
  token: null,
  present: false,
  snapshot: null, // a training step from meta.snapshots; null: the final weights
  predicting: null, // {chapter, id}: the question whose answers mask the chart (questions.js)
  predicted: {}, // what this page answered, by view and question: {given, correct}; kept here only, never sent
  questions: null, // the chapter's questions: {chapter, lang, answer}, asked on the view on screen (navigate.js loadQuestions)
  claims: null, // the chapter's claims: {chapter, lang, differs, lesson, view}, measured on its view and on the one on screen (navigate.js loadClaims)
  chapter: null, // the lesson path's chapter (index into lessons.js CHAPTERS); null: free exploring
  sheet: null, // "params" | "arch": the parameters or architectures sheet above the stage
  explainOpen: false, // presentation mode: the explanation is shown (E toggles it)
  // for one view only (go() clears them):
  preview: null, // the training-progress slider while it is dragged (a position, not yet loaded)
  note: null, // a short confirmation to show: {key, link?}
  generation: 0, // counts go() calls; only the latest one may commit
};

const at = (s) => s.plan.order[s.index];

/** The URL form of the state, in the order the parameters are written. */
export const FIELDS = [
  { key: "model", field: "model", kind: "str", initial: null, always: true },
  { key: "text", field: "text", kind: "str", initial: "", always: true },
  { key: "target", field: "target", kind: "str", initial: "" },
  { key: "chat", field: "chat", kind: "flag", initial: false },
  { key: "stage", field: "stage", kind: "str", initial: null, always: true, get: (s) => at(s).id },
  { key: "layer", field: "layer", kind: "int", min: 0, initial: null, always: true, get: (s) => at(s).layer },
  { key: "head", field: "head", kind: "int", min: 0, initial: 0, always: true },
  { key: "view", field: "view", kind: "choice", values: ["head", "heads", "layers"], initial: "head" },
  { key: "lang", field: "lang", kind: "str", initial: "en", always: true },
  { key: "present", field: "present", kind: "flag", initial: false },
  { key: "iv", field: "iv", kind: "choice", values: KINDS, aliases: ALIASES, initial: null, always: true },
  { key: "ivw", field: "ivWindow", kind: "int", min: 0, initial: 2, always: true, when: (s) => s.iv === "window" },
  { key: "ivt", field: "ivTemp", kind: "num", above: 0, initial: 2, always: true, when: (s) => s.iv === "temperature" },
  { key: "snap", field: "snapshot", kind: "int", min: 0, initial: null, always: true },
  { key: "chapter", field: "chapter", kind: "str", initial: null, always: true, get: (s) => (s.chapter === null || s.chapter === undefined ? null : CHAPTERS[s.chapter].id) },
  { key: "sheet", field: "sheet", kind: "choice", values: ["params", "arch"], initial: null, always: true },
];

/** The view a URL asks for (missing parameters are undefined); cmp=1, the older link to "softmax without ÷√d_k", opens no_scale. */
export function readURL() {
  const url = readFields(FIELDS);
  if (url.iv === undefined && new URLSearchParams(location.search).get("cmp") === "1") url.iv = "no_scale";
  return url;
}
