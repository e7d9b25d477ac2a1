// Start-up of the lab page: bind the controls, then one go() to what the URL asks for.

import { bindEvents } from "./events.js";
import { go } from "./go.js";
import { readURL } from "./state.js";

async function start() {
  const url = readURL();
  const lang = url.lang || ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en");
  bindEvents();
  await go({ ...url, lang });
  document.body.dataset.ready = "1";
}

start();
