// The lesson path: chapters in the seed texts' order. The list lives on the server (lessons/chapters.json)
// and is rendered into the page (templates/index.html, #chapters-data), so it is written once. Each chapter
// opens one view per language (model, sentence, stage, layer, head, view); what the class should see there
// is measured on the server (GET /api/lessons/<id>/claims?lang=) and printed by the lesson bar (teach.js).
// Text keys: lesson.<id>.title / .body / .look in static/text/<lang>.json. The URL carries the chapter
// (?chapter=<id>; a number from 1 opens the same).

import { bestHead as bestProbeHead, sentenceLang } from "./probes.js";
import { pageHref } from "./shared/site.js";

const ANIMAL = "The animal didn't cross the street because it was too tired";
const FRANCE = "The capital of France is"; // the "why did it say Paris?" chapter's pair of prompts
const ITALY = "The capital of Italy is";

function readChapters() {
  const node = typeof document !== "undefined" ? document.getElementById("chapters-data") : null;
  return node ? JSON.parse(node.textContent) : [];
}

export const CHAPTERS = readChapters();

/** The translator (encoder-decoder) on its own example: both kinds of attention a chapter can open. */
const TRANSLATOR = { arch: "encoder-decoder", text: "en:2026", target: "two thousand", layer: 0, head: 0, view: "head" };

/**
 * A chapter's live links, under its text in the lesson bar (teach.js). Each is either `go`, a go()
 * patch that opens a view of the explorer while the chapter stays open, or `lab`, a /lab panel with
 * the model and sentence on screen. Its words: lesson.<chapter>.link.<id> in static/text/<lang>.json.
 * A new slot is one entry here and its two texts.
 */
// a lab link may name the architecture its panel needs and a sentence for it (the chapter's own model may be
// another kind: the architectures chapter shows the translator, and the objectives panel needs a decoder), or
// a model by name (used when the server has it), and `fields`, the panel's own URL fields (lab/state.js:
// `<panel>.<key>`), so the panel opens on the inputs the chapter's text describes
export const CHAPTER_LINKS = {
  why: [
    // the RNN came back, with a matrix for a state: the explorer on a real DeltaNet layer's state S, and the lab's
    // real head beside its toy, at the layer and head of the chapter's claim (deltanet_state, lessons/chapters.json)
    { id: "state", go: { model: "tiny-deltanet", arch: "decoder", stage: "dn_state", layer: 2, head: 2, view: "head" } },
    { id: "linear", lab: "linear_attention", fields: { "linear_attention.dn_layer": 2, "linear_attention.dn_head": 2 } },
  ],
  qkv: [
    { id: "shapes", lab: "batch_shapes", arch: "decoder", model: "smollm2", text: ANIMAL, fields: { "batch_shapes.layer": 13, "batch_shapes.head": 8 } }, // the batch of 2, view by transpose
  ],
  scale: [
    { id: "gradient", lab: "scaling" }, // the gradient through softmax, with and without the divisor
  ],
  ffn: [
    { id: "lens", lab: "logit_lens" }, // the answer forming block by block (lab: logit_lens)
    { id: "tree", lab: "generation_tree" }, // greedy generation: where each token commits, and the top 3 continued
  ],
  residual: [
    { id: "norms", lab: "norm_statistics", arch: "decoder", text: ANIMAL }, // LayerNorm against BatchNorm, on a batch of two
  ],
  architectures: [
    { id: "objectives", lab: "objectives", arch: "decoder", text: ANIMAL }, // why decoder-only won (lab: objectives)
  ],
  efficiency: [
    { id: "complexity", lab: "complexity" }, // O(n²) time and memory, measured (lab: complexity)
    { id: "flash", lab: "flash", fields: { "flash.dtype": "float16", "flash.block_q": 128 } }, // the same output in tiles, and the bytes it moves, at the claim's query block (lab: flash)
    { id: "kv", lab: "kv_cache_size" }, // what GQA saves while generating (lab: kv_cache_size)
    { id: "linear", lab: "linear_attention" }, // linear attention on this sentence (lab: linear_attention)
    { id: "recurrence", lab: "recurrence", fields: { "recurrence.transformer": "tiny-gpt" } }, // N steps in a row against L blocks
  ],
  paris: [
    { id: "attribution", lab: "logit_attribution" }, // ① which parts write the logit of the top token (" Paris")
    { id: "heads", lab: "activation_patching", fields: { "activation_patching.clean": FRANCE, "activation_patching.corrupted": ITALY, "activation_patching.grid": "heads" } }, // ② one head at a time
    { id: "residual", lab: "activation_patching", fields: { "activation_patching.clean": FRANCE, "activation_patching.corrupted": ITALY, "activation_patching.grid": "residual" } }, // ② layer × position
    { id: "lens", lab: "logit_lens" }, // ③ the block from which the answer is read
  ],
  misconceptions: [
    { id: "flow", lab: "attention_flow" }, // 1 and 6: weights against where information really flows
    { id: "cross", go: { ...TRANSLATOR, stage: "cross_softmax" } }, // 3: the 2014 form, the decoder reads the encoder
    { id: "self", go: { ...TRANSLATOR, stage: "encoder.softmax" } }, // 3: the Transformer's step, a sentence reads itself
    { id: "headcount", lab: "head_count" }, // 4: more heads, narrower heads
  ],
};

/**
 * What a chapter keeps on a projector beyond its lesson bar (presentation mode, teach.js): "formula", the stage's
 * formula, which its text asks the class to read; "points", its numbered list, drawn under the chart.
 */
export const PRESENT_KEEPS = { efficiency: "formula", misconceptions: "points" };

/** The go() patch of a chapter's live link, or null when the chapter has no such `go` link. */
export function linkPatch(chapterId, linkId) {
  const link = (CHAPTER_LINKS[chapterId] || []).find((l) => l.id === linkId);
  return link && link.go ? { ...link.go } : null;
}

/** The /lab panel that explains a stage or a chapter further (static/js/lab: its sections are #panel-<id>). */
const LAB_OF_STAGE = { scale: "scaling", softmax: "scaling", mask: "masks", pos: "positions", rope: "positions", qkv: "parameters", z: "interventions", attn_out: "interventions", logits: "sampling" };
const LAB_OF_CHAPTER = { why: "recurrence", scale: "scaling", mask: "masks", softmax: "interventions", heads: "parameters", positions: "positions", architectures: "masks", efficiency: "parameters", weighted: "interventions", paris: "logit_attribution" };

export function labPanel(stageKey, chapter) {
  if (chapter !== null && chapter !== undefined) return LAB_OF_CHAPTER[CHAPTERS[chapter].id] || null;
  return LAB_OF_STAGE[stageKey] || null;
}

/** The lab's URL for a panel, with this model, sentence and language (the fragment opens the panel). */
export function labURL(panel, s, fields = {}) {
  const p = new URLSearchParams({ panel, model: s.model, text: s.text, lang: s.lang, ...fields });
  return `${pageHref("lab")}?${p}#panel-${panel}`;
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

/** The go() patch that opens chapter `index` in `lang`: its model (navigate.js falls back to a model of the same
 * architecture when the server lacks it), sentence, stage, layer and head. */
export function chapterPatch(index, lang = "en") {
  const c = CHAPTERS[index];
  if (!c) return { chapter: null };
  const v = c[lang === "zh" ? "zh" : "en"];
  return {
    chapter: index,
    model: v.model,
    arch: v.arch,
    text: v.text,
    target: v.target || "",
    stage: c.stage,
    layer: v.layer,
    head: v.head,
    view: c.view,
    iv: c.iv || null,
    sheet: c.sheet || null,
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
