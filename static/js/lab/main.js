// Start-up of the lab page: bind the controls, then one go() to what the URL asks for: its fields,
// and the panel it names (?panel=masks, or a fragment: #masks, #panel-masks).

import { readURL } from "../shared/page.js";
import { plotlyReady } from "../shared/plotly_loader.js";
import { bindEvents, panelOfHash } from "./events.js";
import { go } from "./navigate.js";
import { FIELDS } from "./state.js";

async function start() {
  plotlyReady().catch(() => {}); // starts Plotly now; go() waits for it (and reports it) before drawing
  const url = readURL(FIELDS);
  const panel = panelOfHash(location.hash) || url.panel;
  const lang = url.lang || ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en");
  bindEvents();
  await go({ ...url, lang, ...(panel ? { panel } : {}) });
  document.body.dataset.ready = "1";
}

start();
