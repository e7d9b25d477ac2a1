// What a teacher needs around a chapter (issue 41, item 6): the chapter menu that replaces the lesson bar's plain
// title (any chapter, one choice away, by mouse or keyboard) and the share card (the chapter's link and its QR
// code, drawn by the server with no network: GET /api/lessons/<id>/share). A recorded site has no server to draw
// the code, so its card gives the link only and says so. The print stylesheet (app.css, @media print) turns the
// same page into a handout.

import { api } from "./shared/api.js";
import { h } from "./shared/dom.js";
import { SITE } from "./shared/site.js";
import { CHAPTERS } from "./lessons.js";
import { state } from "./state.js";

/** The chapter menu: the current chapter's title (as the bar words it for this model) chosen among every chapter's. */
export function chapterMenu(t, title) {
  const texts = state.texts[state.lang];
  const options = CHAPTERS.map((c, i) =>
    h("option", { value: String(i), selected: i === state.chapter, text: `${i + 1}. ${i === state.chapter ? title : texts.t(`lesson.${c.id}.title`)}` }),
  );
  return h("select", { id: "chapter-menu", class: "lesson-title chapter-menu", "aria-label": t("chapter_menu") }, options);
}

/** The lesson bar's label of the menu: "Lesson · chapter n of N", tied to the menu for a screen reader. */
export function chapterKicker(t) {
  return h("label", { class: "lesson-kicker", for: "chapter-menu", text: t("lesson_of", { n: state.chapter + 1, total: CHAPTERS.length }) });
}

/** The chapter's link in the page's language, on the address this page was opened at. */
function chapterLink(c) {
  const url = new URL(location.href);
  url.search = new URLSearchParams({ chapter: c.id, lang: state.lang }).toString();
  url.hash = "";
  return url.href;
}

/** An address only this computer opens (localhost): a student's phone cannot follow it. */
function localOnly(link) {
  const host = new URL(link, location.href).hostname;
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\./.test(host);
}

/** Open the share card of the chapter on screen: title, link, QR code (or, in a recorded site, why there is none). */
export async function openShareCard(t) {
  const c = CHAPTERS[state.chapter];
  if (!c) return;
  let dialog = document.getElementById("share-card");
  if (!dialog) {
    dialog = h("dialog", { id: "share-card", class: "share-card", "aria-labelledby": "share-title" });
    document.body.append(dialog);
  }
  const title = h("h2", { id: "share-title", text: `${t("lesson_of", { n: state.chapter + 1, total: CHAPTERS.length })} · ${state.texts[state.lang].t(`lesson.${c.id}.title`)}` });
  const close = h("button", { type: "button", class: "small share-close", text: t("close"), onclick: () => dialog.close() });
  const code = h("div", { class: "share-qr" });
  let link = chapterLink(c);
  const notes = [];
  if (SITE) notes.push(h("p", { class: "share-note share-site", text: t("share_site") }));
  else {
    try {
      const card = await api.lessonShare(c.id, state.lang);
      link = card.link;
      code.append(h("img", { src: `data:image/svg+xml;base64,${btoa(card.svg)}`, alt: t("share_qr_alt", { link }), width: "240", height: "240" }));
    } catch (error) {
      notes.push(h("p", { class: "share-note", text: t("share_failed", { message: error.message || "" }) }));
    }
    if (localOnly(link)) notes.push(h("p", { class: "share-note share-local", text: t("share_local") }));
  }
  dialog.replaceChildren(
    title,
    code,
    h("p", { class: "share-link" }, h("a", { href: link, text: link })),
    ...notes,
    // a class that answers this chapter's questions together (the teacher's page, /class/teach; needs the server)
    ...(SITE ? [] : [h("p", { class: "share-note share-class" }, h("a", { href: `/class/teach?lang=${encodeURIComponent(state.lang)}`, text: t("share_class") }))]),
    h("p", { class: "share-actions" }, close),
  );
  if (!dialog.open) dialog.showModal();
}

// an A4 page's printable width at 96 px per inch: 210 mm less the 12 mm margins of print.css
const PRINT_WIDTH = 700;

/** Keep --print-zoom the factor that fits the panel's widest chart, drawn at the screen's width, to an A4 page
 * (measured on the charts' own drawn width, which the zoom does not change, so it never feeds back on itself). */
export function watchPrintWidth() {
  const panel = document.getElementById("panel");
  if (!panel || typeof MutationObserver === "undefined") return;
  // one rule in a sheet of its own: the pages put no CSS on their elements
  const printSheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, printSheet];
  let pending = false;
  const fit = () => {
    pending = false;
    const widths = [...panel.querySelectorAll(".js-plotly-plot")].map((p) => (p._fullLayout && p._fullLayout.width) || 0);
    const wide = Math.max(0, ...widths);
    printSheet.replaceSync(`:root { --print-zoom: ${wide > PRINT_WIDTH ? PRINT_WIDTH / wide : 1}; }`);
  };
  new MutationObserver(() => {
    if (!pending) (pending = true), requestAnimationFrame(fit);
  }).observe(panel, { childList: true, subtree: true });
}
