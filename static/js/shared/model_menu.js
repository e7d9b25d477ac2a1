// The model chooser's entries, for the explorer and the lab: the models on their own first, then
// each family of trained look-alikes (a checkpoint whose meta carries `pe_family`: the
// positional-encoding family, training/pe_family.py) in one <optgroup>, so six pe-* models do not
// push tiny-gpt out of sight. A model whose meta lists the sentence's language under `first_for`
// (smollm2: ["en"]) comes first for a sentence in that language; tiny-gpt keeps its place for the
// others. The default model is chosen by the caller (the server's default), not by the order here.
// Models the server found but refused (GET /api/health `refused`: a store file it cannot load, a
// model whose loading failed) come last, greyed in their own <optgroup>, each with why on hover.
// Also here: what the page offers for a model of its own (English examples, its chat template).

import { h } from "./dom.js";

/** The family a model belongs to ("pe_family"), or null. */
export function familyOf(model) {
  return model && model.meta && model.meta.pe_family ? "pe_family" : null;
}

/** The language a sentence is mostly written in: "zh" when Han characters outnumber Latin letters, else "en" (as probes.js). */
function sentenceLang(text) {
  const han = (String(text || "").match(/\p{Script=Han}/gu) || []).length;
  const latin = (String(text || "").match(/\p{Script=Latin}/gu) || []).length;
  return han > latin ? "zh" : "en";
}

/** Whether the model comes first in the menu for a sentence in `lang` (meta first_for). */
function firstFor(model, lang) {
  const listed = model && model.meta && model.meta.first_for;
  return Array.isArray(listed) && listed.includes(lang);
}

/**
 * <option>s for the lone models (those first for `text`'s language at the top), then an <optgroup label=familyLabel>
 * with the family members, then the refused models ({name, source, reason}) disabled in an <optgroup
 * label=refused.label>, each titled refused.why(entry). A refused option has no value: a working model of the
 * same name stays the one the menu selects.
 */
export function modelOptions(models, familyLabel, text = "", refused = { list: [], label: "", why: (r) => r.reason }) {
  const option = (m) => h("option", { value: m.name, text: m.name });
  const lang = sentenceLang(text);
  const family = models.filter((m) => familyOf(m));
  const lone = models.filter((m) => !familyOf(m));
  const notLoaded = (r) => h("option", { value: "", disabled: true, "data-refused": r.name, title: refused.why(r), text: r.name });
  const list = Array.isArray(refused.list) ? refused.list : [];
  return [
    ...lone.filter((m) => firstFor(m, lang)).map(option),
    ...lone.filter((m) => !firstFor(m, lang)).map(option),
    ...(family.length ? [h("optgroup", { label: familyLabel }, family.map(option))] : []),
    ...(list.length ? [h("optgroup", { label: refused.label, class: "refused-models" }, list.map(notLoaded))] : []),
  ];
}

/** The layers that have attention heads: every one, but a hybrid's (Qwen3.5) gated DeltaNet layers have none. */
export function attentionLayers(info) {
  const deltanet = (info.config && info.config.deltanet_layers) || [];
  return [...Array(info.n_layers).keys()].filter((i) => !deltanet.includes(i));
}

/** The model reads chat-formatted text (its checkpoint carries a chat template: `chat: true` works). */
export function hasChatTemplate(info) {
  const template = info && info.meta && info.meta.chat_template;
  return typeof template === "string" && template.trim() !== "";
}

/**
 * Sentences worth a lesson that the model's meta offers (`example_sentences`), e.g. "The capital of France is";
 * with the chat format on, its questions (`chat_examples`) instead: a chat model answers a question, and a
 * completion prompt sent as a chat message only confuses it.
 */
export function exampleSentences(info, chat = false) {
  const meta = (info && info.meta) || {};
  const listed = chat && Array.isArray(meta.chat_examples) ? meta.chat_examples : meta.example_sentences;
  return Array.isArray(listed) ? listed.filter((s) => typeof s === "string" && s) : [];
}

/**
 * Which warning the page shows for an English model: a WordPiece vocabulary without Chinese turns it
 * into [UNK] (minilm); a byte-level one (smollm2) reads every character, but learned English only.
 */
export function englishNote(info) {
  const meta = (info && info.meta) || {};
  if (!Array.isArray(meta.language) || meta.language.includes("zh")) return null;
  return info.tokenizer === "wordpiece" ? "english_only" : "english_model";
}
