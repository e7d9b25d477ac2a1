// Start-up of the lab page: import every panel (each declares its URL fields), bind the controls, then
// one go() to what the URL asks for: its fields, and the panel it names (?panel=masks, an older name such
// as ?panel=flow, or a fragment: #masks, #panel-masks).

import { readURL } from "../shared/page.js";
import { plotlyReady } from "../shared/plotly_loader.js";
import { bindEvents, panelOfHash } from "./events.js";
import { go } from "./navigate.js";
import { loadPanels } from "./panels/index.js";
import { FIELDS } from "./state.js";

async function start() {
  plotlyReady().catch(() => {}); // starts Plotly now; go() waits for it (and reports it) before drawing
  await loadPanels();
  const url = readURL(FIELDS);
  const panel = panelOfHash(location.hash) || url.panel;
  const lang = url.lang || ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en");
  bindEvents();
  await go({ ...url, lang, ...(panel ? { panel } : {}) });
  document.body.dataset.ready = "1";
}

start();
