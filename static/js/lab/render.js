// Draws the committed lab state: the fixed words, the model list, the table of contents and the
// one panel shown (its controls and charts). Nothing here changes the state; events.js turns input
// into go() calls.

import { Board } from "../board.js";
import { $, h, tokenChips } from "../shared/dom.js";
import { loadingGroup, watchLoading } from "../shared/loading_models.js";
import { modelOptions } from "../shared/model_menu.js";
import { urlOf } from "../shared/page.js";
import { markRecorded, pageHref } from "../shared/site.js";
import { pageOrder, panelContext, panelModule } from "./panels/index.js";
import { FIELDS } from "./state.js";
import { failure } from "./ui.js";

const boards = new Map(pageOrder().map((name) => [name, new Board($(`board-${name}`))])); // kept between renders

/** The fixed words of the page (data-lab-i18n), its language, and which panel is shown. */
export function renderStatic(texts, s) {
  const say = texts.t;
  for (const line of document.querySelectorAll(".lab-working")) line.remove(); // showWorking's line: the run is over
  document.documentElement.lang = texts.htmlLang;
  for (const el of document.querySelectorAll("[data-lab-i18n]")) el.textContent = say(el.dataset.labI18n);
  for (const section of document.querySelectorAll("#panels > [data-panel]")) section.hidden = section.dataset.panel !== s.panel;
  for (const link of document.querySelectorAll("#toc a[data-panel-link]")) {
    const here = link.dataset.panelLink === s.panel;
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
    if (s.info) link.href = urlOf(FIELDS, { ...s, panel: link.dataset.panelLink }); // the same sentence and model, that panel
  }
  document.title = `${say(`${s.panel}_title`)} · ${say("page_title")}`;
  // presentation mode (P), as in the explorer: the panel list folded away, larger text, and the charts' fonts
  // (shared/plot.js reads body.present) at the projector's sizes
  document.body.classList.toggle("present", Boolean(s.present));
  $("present").textContent = say(s.present ? "exit_present" : "present");
  $("present").setAttribute("aria-pressed", s.present ? "true" : "false");
}

function renderInputs(s, say) {
  const select = $("model");
  const refused = { list: s.refused, label: say("refused_group"), why: (r) => say("refused_why", { reason: r.reason }) };
  select.replaceChildren(...modelOptions(s.models, say("pe_group"), "", refused), ...loadingGroup(s.loading, say));
  select.value = s.model;
  if (s.loading.length) watchLoading(select, say);
  if (document.activeElement !== $("text")) $("text").value = s.text;
  $("tokens").replaceChildren(tokenChips(s.tokens));
}

/** Why the panel's experiment does not run on this model: `<name>_refused`, said of the model and its family. */
function refusal(name, s, say) {
  const family = say(`family_${s.info.architecture.replace("-", "_")}`);
  return h("p", { class: "lab-note lab-refused", text: say(`${name}_refused`, { model: s.model, family }) });
}

/**
 * While the panel's experiment runs: a line in the panel itself, above its last charts, saying what runs
 * (the page's spinner sits in the input bar, scrolled away on a long panel). A panel may say more
 * (`working(ctx)`: ablation names its forward passes); renderStatic() takes the line away.
 */
export function showWorking(s) {
  const texts = s.texts[s.lang];
  const section = document.getElementById(`panel-${s.panel}`);
  if (!texts || !section) return;
  renderStatic(texts, s); // the panel asked for is the one shown, with its title
  const panel = panelModule(s.panel);
  const ctx = panelContext(s, s.panel);
  const say = texts.t;
  const what = (panel.working && panel.working(ctx)) || say("panel_working", { title: say(`${s.panel}_title`), model: s.model });
  let line = section.querySelector(".lab-working");
  if (!line) {
    line = h("p", { class: "lab-working", role: "status" });
    section.querySelector(".panel").before(line);
  }
  const clock = h("span", { class: "lab-working-time", text: say("working_elapsed", { s: 0 }) });
  line.replaceChildren(h("span", { class: "lab-working-dot", "aria-hidden": "true" }), h("span", { text: what }), clock);
  const started = Date.now();
  const tick = setInterval(() => { // the seconds so far, until the line goes (renderStatic) or another run replaces it
    if (!clock.isConnected) clearInterval(tick);
    else clock.textContent = say("working_elapsed", { s: Math.round((Date.now() - started) / 1000) });
  }, 1000);
}

export function render(s) {
  const texts = s.texts[s.lang];
  const say = texts.t;
  renderStatic(texts, s);
  renderInputs(s, say);
  const name = s.panel;
  const panel = panelModule(name);
  const ctx = panelContext(s, name);
  $(`controls-${name}`).replaceChildren(...(s.data.refused ? [] : panel.controls(ctx, s.data.value)));
  const board = boards.get(name);
  board.begin(`${name}:${s.model}`, say);
  if (s.data.refused) board.block(`${name}-refused`, refusal(name, s, say));
  else if (s.data.error) board.block(`${name}-error`, failure(s.data.error, say, texts, name));
  else panel.draw(board, s.data.value, ctx);
  board.end();
  $(`panel-${name}`).dataset.rendered = String(s.generation);
  $("explorer-link").href = `${pageHref("explorer")}?${new URLSearchParams({ model: s.model, text: s.text, lang: s.lang })}`;
  markRecorded(say, "#text, #run, #model, .example"); // a recorded site: a new sentence or model needs the server
}
