// Events: every control and key turns into one go(patch) call (navigate.js). The only handlers
// that do not are the message's own Dismiss button (messages.js) and Escape leaving a text field.

import { snapshotsOf } from "./context.js";
import { CHAPTERS, linkPatch } from "./lessons.js";
import { openShareCard, watchPrintWidth } from "./lesson_tools.js";
import { chapterBy, go, headBy, layerBy, openSentence, stepBy } from "./navigate.js";
import { state } from "./state.js";

const $ = (id) => document.getElementById(id);

function onKey(event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  if (document.querySelector("dialog[open]")) return; // the share card: its own keys (Escape closes it)
  const tag = (event.target && event.target.tagName) || "";
  if (["INPUT", "TEXTAREA", "SELECT"].includes(tag)) {
    if (event.key === "Escape") event.target.blur();
    return;
  }
  const keys = {
    ArrowRight: () => stepBy(1),
    PageDown: () => stepBy(1),
    ArrowLeft: () => stepBy(-1),
    PageUp: () => stepBy(-1),
    Home: () => go({ index: 0 }),
    End: () => state.plan && go({ index: state.plan.order.length - 1 }),
    l: () => layerBy(1),
    L: () => layerBy(-1),
    h: () => headBy(1),
    H: () => headBy(-1),
    p: () => go({ present: !state.present }),
    e: () => go({ explainOpen: !state.explainOpen }),
    "]": () => chapterBy(1),
    "[": () => chapterBy(-1),
    Escape: () => state.present && go({ present: false }),
  };
  if (event.key === " " && state.present) keys[" "] = () => stepBy(event.shiftKey ? -1 : 1);
  const action = keys[event.key];
  if (action) {
    event.preventDefault();
    action();
  }
}

async function copyLink() {
  const url = location.href;
  try {
    await navigator.clipboard.writeText(url);
    go({ note: { key: "link_copied" } });
  } catch (error) {
    go({ note: { key: "link_ready", link: url } });
  }
}

/** The training-progress slider's position as a snapshot step (the last position: final weights). */
function snapshotAt(position) {
  const snaps = snapshotsOf(state.info);
  return position < snaps.length ? snaps[position].step : null;
}

/** The lesson bar's and the sheets' buttons (drawn by teach.js) and the model's offered example. */
function onTeachClick(event) {
  const button = event.target.closest("button[data-chapter], button[data-sheet], button[data-open-model], button[data-live], button[data-share], #offer .example");
  if (!button) return;
  if (button.dataset.share) openShareCard(state.texts[state.lang].t);
  else if (button.dataset.live) {
    const patch = linkPatch(CHAPTERS[state.chapter]?.id, button.dataset.live);
    if (patch) go(patch);
  } else if (button.dataset.chapter === "exit") go({ chapter: null, sheet: null });
  else if (button.dataset.chapter) chapterBy(Number(button.dataset.chapter));
  else if (button.dataset.sheet !== undefined) go({ sheet: button.dataset.sheet || null });
  else if (button.dataset.openModel) go({ model: button.dataset.openModel, stage: "mask", sheet: "arch" });
  else go({ text: button.dataset.text, target: button.dataset.target });
}

export function bindEvents() {
  const inputs = () => ({ text: $("text").value, target: $("target").value });
  $("run").addEventListener("click", () => go(inputs()));
  $("input-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (document.activeElement && document.activeElement.blur) document.activeElement.blur(); // ← → step right away
    go(inputs());
  });
  $("fill-target").addEventListener("click", () => go({ ...inputs(), complete: true }));
  $("model").addEventListener("change", (event) => openSentence({ model: event.target.value }));
  $("chat").addEventListener("change", (event) => go({ ...inputs(), chat: event.target.checked }));
  $("prev").addEventListener("click", () => stepBy(-1));
  $("next").addEventListener("click", () => stepBy(1));
  $("layer").addEventListener("change", (event) => go({ layer: Number(event.target.value) }));
  // from the all-heads grid, a head chosen in the menu opens its own map (as a click on its small map does)
  $("head").addEventListener("change", (event) => go({ head: Number(event.target.value), ...(state.view === "heads" ? { view: "head" } : {}) }));
  $("views").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-view]");
    if (button && !button.disabled) go({ view: button.dataset.view });
  });
  $("stage-list").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-stage]");
    if (button) go({ stage: button.dataset.stage });
  });
  document.querySelector(".examples").addEventListener("click", (event) => {
    const button = event.target.closest(".example");
    if (!button) return;
    // the model's own examples (the translator's) bring their target; the general ones only a sentence
    openSentence(button.dataset.target === undefined ? { text: button.dataset.text } : { text: button.dataset.text, target: button.dataset.target });
  });
  $("snapshot").addEventListener("input", (event) => go({ preview: Number(event.target.value) }));
  $("snapshot").addEventListener("change", (event) => go({ snapshot: snapshotAt(Number(event.target.value)) }));
  $("lang").addEventListener("click", () => go({ lang: state.lang === "en" ? "zh" : "en" }));
  $("present").addEventListener("click", () => go({ present: !state.present }));
  $("copy-link").addEventListener("click", copyLink);
  $("lesson-start").addEventListener("click", () => go({ chapter: state.chapter ?? 0 }));
  $("show-params").addEventListener("click", () => go({ sheet: state.sheet === "params" ? null : "params" }));
  $("show-arch").addEventListener("click", () => go({ sheet: state.sheet === "arch" ? null : "arch" }));
  $("explain-toggle").addEventListener("click", () => go({ explainOpen: !state.explainOpen }));
  document.addEventListener("click", onTeachClick);
  // the chapter menu (lesson_tools.js): a chapter chosen by mouse or keyboard opens it
  document.addEventListener("change", (event) => {
    if (event.target.id === "chapter-menu") go({ chapter: Number(event.target.value) });
  });
  document.addEventListener("keydown", onKey);
  watchPrintWidth(); // print.css scales the charts to an A4 page by it
}
