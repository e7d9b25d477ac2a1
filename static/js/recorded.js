// The explorer in a recorded site (shared/site.js): what the site holds decides where the stepper, the layer
// menu, the example sentences and the model menu can go. A larger model's stepper is recorded at its chapter's
// layer only (static_site/record.py), so → and ← walk that layer's stages and pass over the layers the site does
// not hold, and a menu entry it does not hold is greyed with the reason. On the live server nothing here runs.

import { api, ApiError, isRecorded } from "./shared/api.js";
import { SITE, SERVER_COMMAND } from "./shared/site.js";
import { makeContext, requestBody } from "./context.js";
import { state } from "./state.js";
import { buildPlan, indexOf } from "./stages.js";

/** Whether state `s` at plan index `index` is drawn from the site's answers (its panel's data recorded). */
async function holds(s, index, go) {
  const at = s.plan.order[index];
  try {
    const view = { ...s, index, layer: at.layer ?? s.layer };
    const ctx = makeContext(view, go);
    await ctx.panel.load(ctx);
    return true;
  } catch (error) {
    return !(error instanceof ApiError && error.code === "needs_server"); // another failure is shown when asked
  }
}

/** The next index from `from` in direction `delta` (±1) that the site holds, or null. */
async function nextHeld(s, from, delta, go) {
  for (let index = from; index >= 0 && index < s.plan.order.length; index += delta) {
    if (await holds(s, index, go)) return index;
  }
  return null;
}

/** → / ← in a site: the next stage it holds (a larger model's other layers are passed over). */
export async function stepRecorded(delta, go) {
  const index = await nextHeld(state, state.index + delta, delta, go);
  if (index !== null) go({ index });
}

/**
 * A new sentence or model in a site (an example chip, the model menu): at the same stage when the site holds
 * it there, else at the first stage it holds for that sentence (its recorded view).
 */
export async function openRecorded(patch, go) {
  const next = { ...state, ...patch };
  if (patch.model && patch.model !== state.model) {
    try {
      next.info = await api.model(next.model);
    } catch (error) {
      return go(patch); // not in the site: go() says that it needs the server
    }
    next.plan = buildPlan(next.info);
  }
  const current = state.plan.order[state.index];
  const same = indexOf(next.plan, current.id, current.layer ?? state.layer);
  const index = (await holds(next, same, go)) ? same : await nextHeld(next, 0, 1, go);
  go(index === null ? patch : { ...patch, index });
}

/** Enable `el` (with its own `title`) when the site holds what it opens, else grey it saying `why`. */
function grey(el, why, held, title = "") {
  el.disabled = !held;
  el.title = held ? title : why;
  el.classList.toggle("needs-server", !held);
}

/** A sentence's first request (its tokens) for `model`, as the page would ask it. */
function tokensKey(model, text, target) {
  const body = requestBody({ ...state, model, text, target, info: model === state.model ? state.info : null });
  return ["POST", "/api/tokenize", body];
}

/**
 * After a view is drawn in a site: grey the layers, example sentences and models the site does not hold (the
 * page greyed every example and the model menu first: render.js SERVER_CONTROLS). `why`: the reason shown.
 */
export async function markHeld(generation, go, t) {
  if (!SITE || !state.plan) return;
  const why = t("site_needs_server", { command: SERVER_COMMAND });
  const at = state.plan.order[state.index];
  const layerSel = document.getElementById("layer");
  if (at.layer !== null) {
    for (const option of layerSel.options) {
      const held = await holds(state, indexOf(state.plan, at.id, Number(option.value)), go);
      if (generation !== state.generation) return;
      grey(option, why, held);
    }
  }
  for (const chip of document.querySelectorAll(".examples .example")) {
    const held = isRecorded(...tokensKey(state.model, chip.dataset.text, chip.dataset.target ?? state.target));
    grey(chip, why, held, chip.dataset.text);
  }
  const modelSel = document.getElementById("model");
  let others = 0;
  for (const option of modelSel.options) {
    const held = option.value === state.model ||
      (isRecorded("GET", `/api/models/${encodeURIComponent(option.value)}`) && isRecorded(...tokensKey(option.value, state.text, "")));
    grey(option, why, held);
    if (held && option.value !== state.model) others += 1;
  }
  grey(modelSel, why, others > 0);
}

/** The layer keys in a site: the next layer up or down (`delta`) that it holds at this stage. */
export async function layerRecorded(delta, go) {
  const at = state.plan.order[state.index];
  const step = state.plan.steps.get(at.id);
  const layers = state.plan.layers[step.stack];
  for (let i = layers.indexOf(at.layer) + delta; i >= 0 && i < layers.length; i += delta) {
    if (await holds(state, indexOf(state.plan, at.id, layers[i]), go)) return go({ layer: layers[i] });
  }
  return undefined;
}
