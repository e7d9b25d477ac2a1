// The message line under the input bar: errors (the last good view stays on screen) and short notes.
// `texts` is the Texts of the language on screen; before any text file loaded, the raw error shows.

import { ApiError } from "./api.js";
import { h, tokenText, tokenTexts } from "./dom.js";
import { SERVER_COMMAND } from "./site.js";

const box = () => document.getElementById("message");

/**
 * The server's refusal in the page's language: the server writes English, so a page in another language
 * says a refusal it has words for (shared.<lang>.json: messages_code_<code>) in its own; the English page
 * keeps the server's own, more specific, message. null: no words for it.
 */
export function ownWords(error, texts) {
  if (error && error.code === "model_loading" && texts && texts.lang !== "en") {
    return texts.t("messages_loading", { percent: error.percent ?? "?" }); // how far the load is, in the page's words
  }
  const key = error && error.code ? `messages_code_${error.code}` : "";
  return texts && texts.lang !== "en" && key && texts.has(key) ? texts.t(key) : null;
}

/**
 * A refusal the server explained with `details` ({reason, and its values}), in the page's words
 * (shared.<lang>.json: messages_detail_<reason>), in every language: as specific as the server's English, and
 * naming a field by its on-screen label (`label(field)`, else messages_field_<field>), never by the API's name.
 * null: no details, or no words for the reason (or for the field: then the _unnamed variant, if any).
 */
export function detailWords(error, texts, label = () => null) {
  const details = error && error.details;
  if (!details || !texts || typeof details.reason !== "string") return null;
  const key = `messages_detail_${details.reason}`;
  if (!texts.has(key)) return null;
  const quoted = (text) => tokenText({ text: String(text) });
  const values = { ...details };
  if ("text" in details) values.text = quoted(details.text);
  if ("suggestion" in details) values.suggestion = quoted(details.suggestion);
  if (Array.isArray(details.pieces)) values.pieces = tokenTexts(details.pieces).map((p) => `“${p}”`).join(" + ") || "∅";
  if ("what" in details) { // the thing a number names (layer, head, position), in the page's words
    if (!texts.has(`messages_what_${details.what}`)) return null;
    values.what = texts.t(`messages_what_${details.what}`);
  }
  // a lab experiment by its title on the page, not its API name ("positions" -> "Positions: sinusoidal, RoPE, ...")
  if (typeof details.experiment === "string" && texts.has(`${details.experiment}_title`)) {
    values.experiment = texts.t(`${details.experiment}_title`);
  }
  for (const [name, value] of Object.entries(details)) { // layer numbers: "0, 1" / "0、1"
    if (Array.isArray(value) && value.every((x) => typeof x === "number")) values[name] = texts.list(value);
  }
  for (const name of ["limit", "length", "count", "clean", "corrupted"]) {
    if (typeof details[name] === "number") values[name] = details[name].toLocaleString("en-US");
  }
  if ("field" in details) {
    const own = label(details.field) || (texts.has(`messages_field_${details.field}`) ? texts.t(`messages_field_${details.field}`) : null);
    if (!own) return texts.has(`${key}_unnamed`) ? texts.t(`${key}_unnamed`, values) : null;
    values.field = own;
  }
  return texts.t(key, values);
}

function errorText(error, texts) {
  const t = texts.t;
  if (!(error instanceof ApiError)) return t("err_generic", { detail: String(error && error.message ? error.message : error) });
  if (error.code === "empty_client" || error.code === "empty_text") return t("err_empty");
  if (error.code === "needs_server") return t("site_needs_server", { command: SERVER_COMMAND });
  if (error.status === 0 && error.code === "network") return t("err_down");
  if (error.code === "model_loading") return t("messages_loading", { percent: error.percent ?? "?" });
  if (error.status === 503 || error.status === 429) return t("err_busy");
  if (error.status === 502 || error.status === 504) return t("err_down");
  const said = detailWords(error, texts);
  if (said) return said;
  const own = ownWords(error, texts);
  if (own) return own;
  if (error.status === 413 || /too_long|too_large/.test(error.code)) return t("err_too_long", { detail: error.message });
  return t("err_generic", { detail: error.message });
}

export function showError(error, texts) {
  const text = texts ? errorText(error, texts) : String(error && error.message ? error.message : error);
  box().replaceChildren(
    h("span", { class: "message-text", text }),
    h("button", { type: "button", class: "small", text: texts ? texts.t("dismiss") : "×", onclick: hideMessage }),
  );
  box().hidden = false;
}

/** A short confirmation that hides itself; with `link`, a selected field to copy it from instead. */
export function showNote(text, link) {
  const el = box();
  if (link) {
    const field = h("input", { class: "link-field", value: link, readonly: true });
    el.replaceChildren(h("span", { class: "message-text", text }), field);
    el.hidden = false;
    field.select();
    return;
  }
  el.replaceChildren(h("span", { class: "message-text", text }));
  el.classList.add("ok");
  el.hidden = false;
  setTimeout(() => {
    el.classList.remove("ok");
    if (el.textContent === text) el.hidden = true;
  }, 2500);
}

export function hideMessage() {
  const el = box();
  el.hidden = true;
  el.classList.remove("ok");
  el.replaceChildren();
}
