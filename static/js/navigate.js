// Navigation: every change of view is one call to go(patch), the page loop of shared/page.js with
// what the explorer loads (cached) and draws; stepBy, layerBy, headBy and chapterBy are go() calls.

import { api, ApiError } from "./shared/api.js";
import { LANGS, loadTexts } from "./shared/i18n.js";
import { pageLoop } from "./shared/page.js";
import { plotlyReady } from "./shared/plotly_loader.js";
import { makeContext, requestBody, snapshotsOf } from "./context.js";
import { render, renderStatic, showInputs } from "./render.js";
import { FIELDS, state } from "./state.js";
import { bestHead, chapterPatch, CHAPTERS, modelFor } from "./lessons.js";
import { claimMarks } from "./claim_marks.js";
import { buildPlan, indexOf } from "./stages.js";
import { activeAt, loadIntervention, TEMPS, WINDOWS } from "./intervene.js";
import { loadArch } from "./archview.js";
import { hasChatTemplate } from "./shared/model_menu.js";
import { SITE } from "./shared/site.js";
import { layerRecorded, markHeld, openRecorded, stepRecorded } from "./recorded.js";

/** The stage index the next state shows: an explicit index, a stage id (+ layer), or the same stop. */
function resolveIndex(next, patch, planChanged) {
  const order = next.plan.order;
  if (typeof patch.index === "number") return Math.max(0, Math.min(order.length - 1, patch.index));
  const current = state.plan && state.plan.order[state.index];
  if ("stage" in patch || "layer" in patch || planChanged) {
    const id = patch.stage ?? (current ? current.id : order[0].id);
    const layer = patch.layer ?? (current && current.layer !== null ? current.layer : next.layer);
    return indexOf(next.plan, id, layer);
  }
  return Math.min(next.index, order.length - 1);
}

/** Load everything `next` shows into it (texts, models, model info, tokens, target, index). */
async function prepare(next, patch) {
  if (!LANGS.includes(next.lang)) next.lang = "en";
  if (!next.texts[next.lang]) next.texts = { ...next.texts, [next.lang]: await loadTexts(next.lang, next.lang) };
  if (!next.models.length) {
    next.models = await api.models();
    if (!next.models.length) throw new ApiError(0, "no_models", next.texts[next.lang].t("err_no_models"));
    next.refused = await api.refused();
    next.loading = await api.loading();
  }
  if (!next.posKinds.length) next.posKinds = await api.positionalKinds();
  const names = next.models.map((m) => m.name);
  // a chapter names its model; a server without it shows the chapter on a model of the same architecture
  if (patch.arch && !(patch.model && names.includes(patch.model))) next.model = modelFor(next.models, patch.arch) || next.model;
  if (!names.includes(next.model)) next.model = (next.models.find((m) => m.default) || next.models[0]).name;
  let planChanged = false;
  if (next.model !== state.model || !next.info) {
    next.info = await api.model(next.model);
    next.plan = buildPlan(next.info);
    planChanged = true;
  }
  if (next.snapshot !== null && next.snapshot !== undefined && !snapshotsOf(next.info).some((x) => x.step === next.snapshot)) {
    next.snapshot = null; // this model has no snapshot at that step: its final weights
  }
  if (!next.text || !next.text.trim()) throw new ApiError(0, "empty_client", "");
  const encdec = next.info.architecture === "encoder-decoder";
  if (patch.complete && encdec) {
    // the decoder's own greedy output (top-1) becomes its input, so every target position is filled
    const body = { model: next.model, text: next.text, target_text: next.target, top_k: 1, sample_top_k: 1, temperature: 1, seed: 0, max_new_tokens: 24 };
    const answer = await api.predict(body);
    next.target += answer.generated && answer.generated.text ? answer.generated.text : "";
    showInputs({ target: next.target });
  }
  if (!hasChatTemplate(next.info)) next.chat = false;
  if (planChanged || next.text !== state.text || next.chat !== state.chat || (encdec && next.target !== state.target) || !next.tokens.length) {
    const answer = await api.tokenize(requestBody(next));
    next.tokens = answer.tokens;
    next.targetTokens = answer.target_tokens || null;
    if (next.text !== state.text) next.token = null;
  }
  const picked = patch.pick ? bestHead(next.info, patch.pick, next.text) : null;
  if (picked) next.head = picked.head;
  next.index = resolveIndex(next, picked ? { ...patch, layer: picked.layer } : patch, planChanged);
  const at = next.plan.order[next.index];
  if (at.layer !== null) next.layer = at.layer;
  next.head = Math.max(0, Math.min(next.info.n_heads - 1, next.head || 0));
  // an intervention lives beside the stages it changes: stepping elsewhere turns it off
  next.iv = activeAt(next, next.plan.steps.get(at.id));
  if (!WINDOWS.includes(next.ivWindow)) next.ivWindow = 2;
  if (!TEMPS.includes(next.ivTemp)) next.ivTemp = 2;
}

/** The next state before loading: a chapter of the lesson path is a patch of its own (model kind, sentence, stage, ...). */
function begin(request) {
  // a chapter opens its own view in the page's language: switching language inside a chapter reopens it
  const relang = "lang" in request && !("chapter" in request) && request.lang !== state.lang && typeof state.chapter === "number";
  const asked = relang ? { ...request, chapter: state.chapter } : request;
  const patch = typeof asked.chapter === "number" ? { ...chapterPatch(asked.chapter, asked.lang ?? state.lang), ...asked } : asked;
  const { stage, complete, arch, pick, ...fields } = patch; // eslint-disable-line no-unused-vars
  if ("text" in patch || "target" in patch) showInputs(patch);
  return { next: { ...state, preview: null, note: null, ...fields }, patch };
}

/** Everything the next view draws: the panel's data, both runs of an intervention, the architectures sheet. */
async function load(next, patch) {
  await prepare(next, patch);
  const ctx = makeContext(next, go);
  const [data, ivData, archData, claims, questions] = await Promise.all([
    ctx.panel.load(ctx),
    loadIntervention(ctx),
    next.sheet === "arch" ? loadArch(next) : null,
    loadClaims(next),
    loadQuestions(next),
    plotlyReady(),
  ]);
  next.claims = claims;
  next.questions = questions;
  ctx.marks = claimMarks(claims); // the row and cell each claim measured on this view speaks of (claim_marks.js)
  return { ctx, data, ivData, archData };
}

/**
 * A chapter's claims, measured on the server: `lesson`, on the chapter's own view (none when this server lacks its
 * model), and, once the class has changed the sentence, model, layer or head, `view`, the chart's claims measured
 * again on the view on screen (lesson_claims.py; none where it cannot be: the bar then marks every line as the
 * lesson's sentence's, so no "measured on screen" line goes stale).
 */
async function loadClaims(next) {
  const on = lessonView(next);
  if (!on) return null;
  const { c, screen, differs } = on;
  const ask = (view) =>
    api.lessonClaims(c.id, next.lang, view).catch((error) => {
      console.warn("claims not measured:", error); // eslint-disable-line no-console
      return null; // the chapter still opens; its lines are left out or marked as the lesson's
    });
  // a sentence in the chat template is not the chapter's kind of view: every line stays the lesson's sentence's
  const [lesson, view] = await Promise.all([ask(null), differs && !next.chat ? ask(screen) : null]);
  return { chapter: c.id, lang: next.lang, differs, lesson, view };
}

/** The chapter on screen, the view on screen, and whether it differs from the chapter's own (null: no chapter, or
 * one shown on another model). */
function lessonView(next) {
  const c = typeof next.chapter === "number" ? CHAPTERS[next.chapter] : null;
  if (!c) return null;
  const own = c[next.lang === "zh" ? "zh" : "en"];
  const models = next.models || [];
  if (models.length && !models.some((m) => m.name === own.model)) return null; // shown on another model: teach.js says so
  const screen = { text: next.text, target: next.target || "", model: next.model, layer: next.layer, head: next.head };
  const differs = screen.text !== own.text || screen.model !== own.model || (own.target || "") !== screen.target || Boolean(next.chat) ||
    (typeof screen.layer === "number" && screen.layer !== own.layer) || (typeof screen.head === "number" && screen.head !== own.head);
  return { c, screen, differs };
}

/**
 * A chapter's questions (predict, then reveal: questions.js), answered on the server on the view on screen (the
 * chapter's own, or the class's sentence, model, layer or head). None in the chat template, and none where they
 * cannot be had (a recorded site that did not record them): the chapter opens without them.
 */
async function loadQuestions(next) {
  const on = lessonView(next);
  if (!on || next.chat) return null;
  const answer = await api.lessonQuestions(on.c.id, next.lang, on.differs ? on.screen : null).catch((error) => {
    console.warn("questions not asked:", error); // eslint-disable-line no-console
    return null;
  });
  return { chapter: on.c.id, lang: next.lang, answer };
}

function draw({ ctx, data, ivData, archData }) {
  render(ctx, data, ivData, archData);
  prefetchNeighbours(state.generation);
  if (SITE) markHeld(state.generation, go, ctx.t); // a recorded site: grey the layers, sentences, models it lacks
}

/** The Texts to report a failure in (before any view is on screen, the page's words in that language first). */
function fail(error, next) {
  const shown = state.info ? state.texts[state.lang] : next.texts[next.lang];
  if (!state.info && shown) renderStatic(shown, next.present, next.explainOpen);
  return shown;
}

/**
 * The one way the view changes. `patch`: the fields of the state to change, plus `stage` (a stage
 * id), `complete` (let the decoder write the target first), `arch` (a model of that architecture),
 * `pick` (the head that best shows a pattern). preview and note last one view only.
 */
export const go = pageLoop({ state, fields: FIELDS, begin, prepare: load, draw, fail });

/**
 * After a view is drawn, load (into api.js's cache) what the stages before and after it need, so
 * the → / ← step that usually follows draws without a round trip. Failures are ignored here: the
 * step itself will ask again and report them.
 */
function prefetchNeighbours(generation) {
  const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 50));
  idle(() => {
    if (generation !== state.generation) return;
    for (const delta of [1, -1]) {
      const index = state.index + delta;
      if (index < 0 || index >= state.plan.order.length) continue;
      const at = state.plan.order[index];
      const next = { ...state, index, layer: at.layer ?? state.layer };
      try {
        const ctx = makeContext(next, go);
        ctx.panel.load(ctx).catch(() => {});
      } catch (error) {
        // a view that cannot be built now is built (and explained) when it is asked for
      }
    }
  });
}

export function stepBy(delta) {
  if (!state.plan) return;
  if (SITE) {
    stepRecorded(delta, go);
    return;
  }
  const index = state.index + delta;
  if (index < 0 || index >= state.plan.order.length) return;
  go({ index });
}

export function layerBy(delta) {
  const at = state.plan && state.plan.order[state.index];
  if (!at || at.layer === null) return;
  if (SITE) {
    layerRecorded(delta, go);
    return;
  }
  const step = state.plan.steps.get(at.id);
  const layers = state.plan.layers[step.stack];
  const i = layers.indexOf(at.layer) + delta;
  if (i >= 0 && i < layers.length) go({ layer: layers[i] });
}

export function headBy(delta) {
  if (!state.info) return;
  const n = state.info.n_heads;
  go({ head: (state.head + delta + n) % n });
}

/** A new sentence or model (an example chip, the model menu); in a recorded site, a view it holds. */
export function openSentence(patch) {
  if (SITE) openRecorded(patch, go);
  else go(patch);
}

/** The lesson path: the next / previous chapter (from free exploring, the first one). */
export function chapterBy(delta) {
  const at = state.chapter === null ? (delta > 0 ? -1 : CHAPTERS.length) : state.chapter;
  const index = at + delta;
  if (index >= 0 && index < CHAPTERS.length) go({ chapter: index });
}
