// Start-up: bind the controls, then show the view the URL asks for with one go().
// state.js holds the state, navigate.js changes it (go, the loop of shared/page.js), render.js
// draws it, events.js binds input.

import { api } from "./shared/api.js";
import { bindEvents } from "./events.js";
import { go } from "./navigate.js";
import { chapterIndex } from "./lessons.js";
import { plotlyReady } from "./shared/plotly_loader.js";
import { curveDrawn } from "./progress.js";
import { readURL } from "./state.js";

async function start() {
  const url = readURL();
  // the first requests go out before Plotly's script runs (it holds the main thread for a while)
  api.models().catch(() => {});
  api.positionalKinds().catch(() => {});
  if (url.model) api.model(url.model).catch(() => {});
  plotlyReady().catch(() => {}); // starts Plotly now; go() waits for it (and reports it) before drawing
  const wanted = url.lang || ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en");
  bindEvents();
  const chapter = url.chapter ? chapterIndex(url.chapter) : -1;
  if (chapter >= 0 && !url.stage) {
    // a chapter link: the chapter opens its own view
    await go({ chapter, lang: wanted === "zh" ? "zh" : "en", present: url.present ?? false });
    await curveDrawn(document.getElementById("loss-curve")); // the page is ready with its loss curve
    document.body.dataset.ready = "1";
    return;
  }
  await go({
    ...(chapter >= 0 ? { chapter } : {}),
    lang: wanted === "zh" ? "zh" : "en",
    model: url.model,
    text: url.text ?? document.getElementById("text").value,
    target: url.target ?? "",
    chat: url.chat,
    stage: url.stage,
    layer: url.layer ?? 0,
    head: url.head ?? 0,
    view: url.view ?? "head",
    present: url.present ?? false,
    iv: url.iv ?? null,
    ...(url.ivWindow ? { ivWindow: url.ivWindow } : {}),
    ...(url.ivTemp ? { ivTemp: url.ivTemp } : {}),
    snapshot: url.snapshot ?? null,
    sheet: url.sheet ?? null,
  });
  await curveDrawn(document.getElementById("loss-curve")); // the page is ready with its loss curve
  document.body.dataset.ready = "1";
}

start();
