// Navigation: every change is one call to go(patch). It builds the next state, loads what every
// panel shows (answers are cached by request, so only the changed panel costs a round trip), and
// only then commits, renders and writes the URL. A panel that fails shows why in its own place.

import { api, ApiError } from "../api.js";
import { loadTexts } from "../i18n.js";
import { hideMessage, showError } from "../messages.js";
import { PANELS } from "./panels/index.js";
import { render, renderStatic, setBusy } from "./render.js";
import { lab, writeURL } from "./state.js";

async function prepare(next) {
  if (!["en", "zh"].includes(next.lang)) next.lang = "en";
  if (!next.texts[next.lang]) next.texts = { ...next.texts, [next.lang]: await loadTexts(`lab.${next.lang}`) };
  if (!next.models.length) next.models = await api.models();
  const names = next.models.map((m) => m.name);
  if (!names.includes(next.model)) next.model = (next.models.find((m) => m.default) || next.models[0]).name;
  if (!next.info || next.info.name !== next.model) next.info = await api.model(next.model);
  if (!next.text || !next.text.trim()) throw new ApiError(0, "empty_client", "");
  const loads = PANELS.map((panel) => Promise.resolve()
    .then(() => panel.load(next, next.info))
    .then((value) => ({ value }), (error) => ({ error })));
  next.data = Object.fromEntries((await Promise.all(loads)).map((entry, i) => [PANELS[i].id, entry]));
}

export async function go(patch) {
  const mine = ++lab.generation;
  const next = { ...lab, ...patch };
  setBusy(true);
  try {
    await prepare(next);
    if (mine !== lab.generation) return;
    Object.assign(lab, next);
    hideMessage();
    render(lab);
    writeURL(lab);
    // a link to one panel (/lab?panel=masks) lands on it once every panel above it has drawn
    if (patch.panel) document.getElementById(`panel-${patch.panel}`)?.scrollIntoView({ block: "start" });
  } catch (error) {
    if (mine !== lab.generation) return;
    const texts = next.texts[next.lang] || lab.texts[lab.lang];
    if (texts) renderStatic(texts);
    showError(error, texts);
    console.warn("lab not changed:", error); // eslint-disable-line no-console
  } finally {
    if (mine === lab.generation) setBusy(false);
  }
}
