// Draws the committed lab state: the fixed words, the model list, and each panel (controls, lead
// text and charts). Nothing here changes the state; events.js turns input into go() calls.

import { Board } from "../board.js";
import { tokenChips } from "../panels/tokens.js";
import { modelOptions } from "../model_menu.js";
import { PANELS } from "./panels/index.js";
import { failure } from "./ui.js";

const $ = (id) => document.getElementById(id);
const boards = new Map(PANELS.map((panel) => [panel.id, new Board($(`board-${panel.id}`))])); // kept between renders

export function setBusy(busy) {
  document.body.classList.toggle("busy", busy);
}

/** The fixed words of the page (data-lab-i18n) and its language. */
export function renderStatic(texts) {
  const say = texts.t;
  document.documentElement.lang = texts.htmlLang;
  for (const el of document.querySelectorAll("[data-lab-i18n]")) el.textContent = say(el.dataset.labI18n);
  document.title = say("page_title");
}

function renderInputs(s, say) {
  const select = $("model");
  select.replaceChildren(...modelOptions(s.models, say("pe_group")));
  select.value = s.model;
  if (document.activeElement !== $("text")) $("text").value = s.text;
  const ids = s.data.interventions && s.data.interventions.value;
  $("tokens").replaceChildren(ids ? tokenChips(ids.original.tokens) : "");
}

export function render(s) {
  const texts = s.texts[s.lang];
  const say = texts.t;
  renderStatic(texts);
  renderInputs(s, say);
  for (const panel of PANELS) {
    const entry = s.data[panel.id] || {};
    const controls = $(`controls-${panel.id}`);
    controls.replaceChildren(...panel.controls(s, say, s.info, s.models));
    const board = boards.get(panel.id);
    board.begin(`${panel.id}:${s.model}`, say);
    if (entry.error) board.block(`${panel.id}-error`, failure(entry.error, say));
    else panel.draw(board, entry.value, { say, s, info: s.info });
    board.end();
    $(`panel-${panel.id}`).dataset.rendered = String(s.generation);
  }
  $("explorer-link").href = `/?${new URLSearchParams({ model: s.model, text: s.text, lang: s.lang })}`;
}
