// A recorded site (`transformer-explorer export-site`, static_site/): the lessons as files that open from a
// USB stick or any static host. Its site.js sets window.TE_SITE before the page's script runs; on the live
// server there is none, and every function here is a no-op. The recorded answers are the server's own
// response bodies, read through the same api.js (shared/api.js), so a chart cannot differ between the two.

export const SITE = (typeof window !== "undefined" && window.TE_SITE) || null;

/** The one line that starts the server, as README and docs/DEPLOY.md give it. */
export const SERVER_COMMAND = "make run  ·  docker run -p 8000:8000 transformer-explorer";

/** The explorer's and the lab's address: a page beside this one in a site, the server's route otherwise. */
export function pageHref(page) {
  if (SITE) return page === "lab" ? "lab.html" : "index.html";
  return page === "lab" ? "/lab" : "/";
}

/**
 * In a site: the banner says what was recorded (models, date, version) and that a new sentence needs the
 * server; the controls that need it (`selectors`) are disabled, their title saying why. `t`: the page's words.
 */
export function markRecorded(t, selectors) {
  if (!SITE) return;
  const { models, date, version } = SITE.about();
  const banner = document.getElementById("site-banner");
  if (banner) banner.textContent = t("site_banner", { models: models.join(", "), date, version, command: SERVER_COMMAND });
  const why = t("site_needs_server", { command: SERVER_COMMAND });
  for (const el of document.querySelectorAll(selectors)) {
    el.disabled = true;
    el.title = why;
    el.classList.add("needs-server");
  }
}
