// Models the server is still loading (GET /api/health `loading`: a big file takes a minute or more). The model
// menu shows each one greyed with how far it is; this asks the server again every 2 s and updates the numbers
// until none is left loading. A model that finished says so: the page offers it after a reload.

import { request } from "./api.js";
import { h } from "./dom.js";

const EVERY_MS = 2000;

/** The <optgroup> of the models loading now ({name, percent}), or nothing when none is. */
export function loadingGroup(list, t) {
  if (!Array.isArray(list) || !list.length) return [];
  const option = (m) => h("option", { value: "", disabled: true, "data-loading": m.name,
                                      text: t("loading_model", { name: m.name, percent: m.percent }) });
  return [h("optgroup", { label: t("loading_group"), class: "loading-models" }, list.map(option))];
}

/** Ask /api/health again until nothing loads; update the menu's loading options in place. */
export function watchLoading(select, t) {
  if (select.dataset.watching) return; // one watcher per menu (a mark on the element, not module state)
  select.dataset.watching = "yes";
  const tick = async () => {
    let loading = [];
    try {
      const health = await request("GET", "/api/health");
      loading = Array.isArray(health.loading) ? health.loading : [];
    } catch {
      loading = null; // the server did not answer: ask again later
    }
    for (const option of select.querySelectorAll("option[data-loading]")) {
      if (loading === null) continue;
      const now = loading.find((m) => m.name === option.dataset.loading);
      option.textContent = now ? t("loading_model", { name: now.name, percent: now.percent })
                               : t("loading_done", { name: option.dataset.loading });
    }
    if (loading === null || loading.length) setTimeout(tick, EVERY_MS);
    else delete select.dataset.watching;
  };
  setTimeout(tick, EVERY_MS);
}
