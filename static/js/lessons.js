// The lesson path: chapters in the seed texts' order. Each chapter is a go() patch (which model
// kind, sentence, stage, layer, head, view) plus text keys lesson.<id>.title / lesson.<id>.look
// in static/text/<lang>.json. The URL carries the chapter (?chapter=<id>; a number from 1 opens the same).

import { bestHead as bestProbeHead, sentenceLang } from "./probes.js";

const ANIMAL = "The animal didn't cross the street because it was too tired";
const LOVE = "我爱你"; // the textbook's “我 爱 你”: tiny-gpt reads it as 我, 爱, 你 (a space would be a token of its own)
const BEIJING = "我爱北京天安门广场。";

export const CHAPTERS = [
  { id: "why", arch: "decoder", text: ANIMAL, stage: "softmax", layer: 0, head: 0, view: "head" },
  { id: "qkv", arch: "decoder", text: LOVE, stage: "qkv", layer: 0, head: 0, view: "head" },
  { id: "scores", arch: "decoder", text: LOVE, stage: "scores", layer: 0, head: 0, view: "head" },
  { id: "scale", arch: "decoder", text: LOVE, stage: "softmax", layer: 0, head: 0, view: "head", iv: "no_scale" },
  { id: "mask", arch: "decoder", text: BEIJING, stage: "mask", layer: 0, head: 0, view: "head" },
  // pick: the layer and head come from the model's measured head scores, best first: real sentences
  // typed twice in the chapter sentence's language (meta.natural_head_scores) when measured, else the
  // random-token probe (meta.head_scores); the lesson bar says which (teach.js)
  { id: "softmax", arch: "decoder", text: BEIJING, stage: "softmax", layer: 0, head: 0, view: "head", pick: "previous-token" },
  { id: "weighted", arch: "decoder", text: LOVE, stage: "softmax", layer: 0, head: 0, view: "head" },
  { id: "heads", arch: "decoder", text: ANIMAL, stage: "softmax", layer: 0, head: 0, view: "heads", pick: "previous-token" },
  { id: "ffn", arch: "decoder", text: ANIMAL, stage: "ffn_act", layer: 0, head: 0, view: "head", sheet: "params" },
  { id: "residual", arch: "encoder-decoder", text: "en:2026", target: "two thousand", stage: "resid_mid", layer: 0, head: 0, view: "head" },
  { id: "positions", arch: "decoder", text: BEIJING, stage: "pos", layer: 0, head: 0, view: "head" },
  { id: "architectures", arch: "encoder-decoder", text: "en:2026", target: "two thousand", stage: "cross_softmax", layer: 0, head: 0, view: "head", sheet: "arch" },
  { id: "efficiency", arch: "decoder", text: BEIJING, stage: "qkv", layer: 0, head: 0, view: "head", sheet: "params" },
  { id: "misconceptions", arch: "decoder", text: BEIJING, stage: "softmax", layer: 0, head: 0, view: "heads" },
];

/** The translator (encoder-decoder) on its own example: both kinds of attention a chapter can open. */
const TRANSLATOR = { arch: "encoder-decoder", text: "en:2026", target: "two thousand", layer: 0, head: 0, view: "head" };

/**
 * A chapter's live links, under its text in the lesson bar (teach.js). Each is either `go`, a go()
 * patch that opens a view of the explorer while the chapter stays open, or `lab`, a /lab panel with
 * the model and sentence on screen. Its words: lesson.<chapter>.link.<id> in static/text/<lang>.json.
 * A new slot is one entry here and its two texts.
 */
// a lab link may name the architecture its panel needs and a sentence for it (the chapter's own model may be
// another kind: the architectures chapter shows the translator, and the objectives panel needs a decoder)
export const CHAPTER_LINKS = {
  architectures: [
    { id: "objectives", lab: "objectives", arch: "decoder", text: ANIMAL }, // why decoder-only won (lab: objectives)
  ],
  efficiency: [
    { id: "linear", lab: "linear_attention" }, // linear attention on this sentence
  ],
  misconceptions: [
    { id: "flow", lab: "attention_flow" }, // 1 and 6: weights against where information really flows
    { id: "cross", go: { ...TRANSLATOR, stage: "cross_softmax" } }, // 3: the 2014 form, the decoder reads the encoder
    { id: "self", go: { ...TRANSLATOR, stage: "encoder.softmax" } }, // 3: the Transformer's step, a sentence reads itself
    { id: "headcount", lab: "head_count" }, // 4: more heads, narrower heads
  ],
};

/** The go() patch of a chapter's live link, or null when the chapter has no such `go` link. */
export function linkPatch(chapterId, linkId) {
  const link = (CHAPTER_LINKS[chapterId] || []).find((l) => l.id === linkId);
  return link && link.go ? { ...link.go } : null;
}

/** The /lab panel that explains a stage or a chapter further (static/js/lab: its sections are #panel-<id>). */
const LAB_OF_STAGE = { scale: "scaling", softmax: "scaling", mask: "masks", pos: "positions", rope: "positions", qkv: "parameters", z: "interventions", attn_out: "interventions", logits: "sampling" };
const LAB_OF_CHAPTER = { scale: "scaling", mask: "masks", softmax: "interventions", heads: "parameters", positions: "positions", architectures: "masks", efficiency: "parameters", weighted: "interventions" };

export function labPanel(stageKey, chapter) {
  if (chapter !== null && chapter !== undefined) return LAB_OF_CHAPTER[CHAPTERS[chapter].id] || null;
  return LAB_OF_STAGE[stageKey] || null;
}

/** The lab's URL for a panel, with this model, sentence and language (the fragment opens the panel). */
export function labURL(panel, s) {
  const p = new URLSearchParams({ panel, model: s.model, text: s.text, lang: s.lang });
  return `/lab?${p}#panel-${panel}`;
}

/** A chapter by id ("softmax") or by its number as the lesson bar shows it, from 1 ("6"); -1 when neither. */
export function chapterIndex(id) {
  const text = String(id ?? "").trim();
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    return n >= 1 && n <= CHAPTERS.length ? n - 1 : -1;
  }
  return CHAPTERS.findIndex((c) => c.id === text);
}

/** The go() patch that opens chapter `index` (the model is picked by architecture in navigate.js). */
export function chapterPatch(index) {
  const c = CHAPTERS[index];
  if (!c) return { chapter: null };
  return {
    chapter: index,
    arch: c.arch,
    text: c.text,
    target: c.target || "",
    stage: c.stage,
    layer: c.layer,
    head: c.head,
    view: c.view,
    iv: c.iv || null,
    sheet: c.sheet || null,
    pick: c.pick,
  };
}

/** The self-attention head with the highest measured `pattern` score on `text`'s language, real text first (probes.js). */
export function bestHead(info, pattern, text = "") {
  return bestProbeHead(info, pattern, sentenceLang(text));
}

/** The first model of an architecture, the default one first. */
export function modelFor(models, arch) {
  const fits = models.filter((m) => m.architecture === arch);
  const chosen = fits.find((m) => m.default) || fits.find((m) => /^tiny-/.test(m.name)) || fits[0];
  return chosen ? chosen.name : undefined;
}
