// The lab's go(patch): the page loop of shared/page.js with what the lab loads. Only the panel on
// screen loads (answers are cached by request, so coming back to a panel costs no round trip); a
// panel that fails shows why in its own place, and the rest of the page stays. A panel whose
// experiment refuses the model's family (or whose module refuses what the model lacks) shows that instead of asking.

import { ApiError, api } from "../shared/api.js";
import { LANGS, loadTexts } from "../shared/i18n.js";
import { pageLoop } from "../shared/page.js";
import { plotlyReady } from "../shared/plotly_loader.js";
import { experimentOf, pageOrder, panelContext, panelModule, panelNamed } from "./panels/index.js";
import { render, renderStatic, showWorking } from "./render.js";
import { clampToModel, FIELDS, lab } from "./state.js";

async function prepare(next) {
  if (!LANGS.includes(next.lang)) next.lang = "en";
  if (!next.texts[next.lang]) next.texts = { ...next.texts, [next.lang]: await loadTexts(`lab.${next.lang}`, next.lang) };
  next.panel = panelNamed(next.panel) || pageOrder()[0];
  if (!next.models.length) {
    next.models = await api.models();
    next.refused = await api.refused();
    next.loading = await api.loading();
  }
  const names = next.models.map((m) => m.name);
  if (!names.includes(next.model)) next.model = (next.models.find((m) => m.default) || next.models[0]).name;
  if (!next.info || next.info.name !== next.model) next.info = await api.model(next.model);
  clampToModel(next, next.info); // a layer or head the model has (the URL's, or one set on a larger model)
  if (!next.text || !next.text.trim()) throw new ApiError(0, "empty_client", "");
  next.tokens = (await api.tokenize({ model: next.model, text: next.text })).tokens;
  const experiment = experimentOf(next.panel);
  const panel = panelModule(next.panel);
  // refused by the model's family (the experiment's declaration), or by what the model lacks (the panel's
  // refuses(info): a NoPE view on a model without NoPE layers), said without asking
  if (experiment && (experiment.refuses.includes(next.info.architecture) || (panel.refuses && panel.refuses(next.info)))) {
    next.data = { refused: next.info.architecture };
    return;
  }
  showWorking(next); // a long experiment (ablation on SmolLM2) says in its own panel what it is running
  const [data] = await Promise.all([
    Promise.resolve().then(() => panel.load(panelContext(next, next.panel))).then((value) => ({ value }), (error) => ({ error })),
    plotlyReady(),
  ]);
  next.data = data;
}

/** The Texts to report a failure in (the page's words in that language first). */
function fail(error, next) {
  const texts = next.texts[next.lang] || lab.texts[lab.lang];
  if (texts) renderStatic(texts, next);
  return texts;
}

/** The one way the lab changes: `patch` sets fields of the state (panel, model, text, a control's field). */
export const go = pageLoop({
  state: lab,
  fields: FIELDS,
  prepare,
  draw: () => render(lab),
  fail,
  push: (before, after) => Boolean(before.info) && before.panel !== after.panel, // Back returns to the panel before
});
