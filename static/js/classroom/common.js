// What both class pages share: their words (rendered into the page as data by app/routers/pages.py), the
// class API with its errors in the page's language, the live stream that reconnects by itself, and the
// distribution bars (values and counts only: no names are ever on a shared screen).

import { send } from "../shared/api.js";

const DATA = JSON.parse(document.getElementById("class-data").textContent);
export const CHAPTERS = DATA.chapters;
export const LANG = DATA.lang;

/** A word of the page, its {placeholders} filled. */
export function t(key, values = {}) {
  const text = DATA.words[key];
  if (text === undefined) {
    console.error(`text: no class word "${key}"`); // eslint-disable-line no-console
    return key;
  }
  return text.replace(/\{(\w+)\}/g, (whole, name) => (values[name] !== undefined ? String(values[name]) : whole));
}

export function chapterTitle(id) {
  const index = CHAPTERS.findIndex((c) => c.id === id);
  return index < 0 ? id : `${index + 1}. ${CHAPTERS[index].title}`;
}

export class ClassError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

/** The refusal in the page's language (class_error_<code>, filled with the server's values), else the server's. */
export function say(error) {
  if (error instanceof ClassError && DATA.words[`class_error_${error.code}`] !== undefined) {
    return t(`class_error_${error.code}`, error.details);
  }
  return String(error && error.message ? error.message : error);
}

export function showMessage(text) {
  const box = document.getElementById("class-message");
  box.textContent = text || "";
  box.hidden = !text;
}

/** One call of the class API; its cookies (the teacher's key, a student's token) go with it. */
export async function api(method, path, body, headers = {}) {
  let response;
  try {
    response = await send(method, path, body, headers);
  } catch (_) {
    throw new ClassError(0, "network", "network");
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    throw new ClassError(response.status, error.code || "http_error", error.message || `HTTP ${response.status}`, error.details);
  }
  return data;
}

/**
 * The class's live events. EventSource reconnects by itself after a dropped connection (the server's
 * `retry:`) and each connection starts with the whole state, so nothing is missed. A refused reconnect (the
 * server restarting, the class ended) closes it: then `check()` decides, and a new one is opened.
 */
export function follow(path, { onState, onEnded, check }) {
  const live = document.getElementById("live");
  let source = null;
  const open = () => {
    source = new EventSource(path);
    source.addEventListener("state", (event) => {
      live.hidden = false;
      live.textContent = `● ${t("class_live")}`;
      live.classList.remove("lost");
      onState(JSON.parse(event.data));
    });
    source.addEventListener("ended", () => { source.close(); onEnded(); });
    source.onerror = () => {
      live.hidden = false;
      live.textContent = t("class_reconnecting");
      live.classList.add("lost");
      if (source.readyState === EventSource.CLOSED) setTimeout(async () => { if (await check()) open(); }, 2000);
    };
  };
  open();
  return () => source && source.close();
}

/** An answer as the question shows it: a token position as its token, a choice or block by its label. */
export function answerLabel(asked, value) {
  const option = asked && (asked.options || []).find((o) => String(o.value) === String(value));
  if (!option) return String(value);
  return asked.answer_type === "token" ? `${option.label.replace(/ /g, "␣")} (#${option.value})` : String(option.label);
}

/** The question asked (its prompt), and after the reveal the measured answer and the one line on why. */
export function drawQuestion(box, view) {
  box.replaceChildren();
  if (!view.asked) return;
  const prompt = document.createElement("p");
  prompt.className = "class-prompt";
  prompt.textContent = view.asked.prompt;
  box.append(prompt);
  if (view.revealed && view.asked.why) {
    const why = document.createElement("p");
    why.className = "class-why";
    why.textContent = `${t("class_right_answer", { answer: answerLabel(view.asked, view.asked.answer) })} ${view.asked.why}`;
    box.append(why);
  }
}

/** The distribution as bars: each answer's share, its count, and after the reveal whether it is right. */
export function drawBars(box, view) {
  box.replaceChildren();
  const bars = view.distribution || [];
  const total = Math.max(1, view.answered);
  const rows = [...bars.map((b) => ({ label: answerLabel(view.asked, b.value), count: b.count, correct: b.correct }))];
  if (view.other) rows.push({ label: t("class_other"), count: view.other, correct: null });
  for (const row of rows) {
    const line = document.createElement("div");
    line.className = "class-bar";
    if (view.revealed && row.correct === true) line.classList.add("right");
    if (view.revealed && row.correct === false) line.classList.add("wrong");
    const label = document.createElement("span");
    label.className = "class-bar-label";
    label.textContent = row.label; // text, never HTML
    const track = document.createElement("progress"); // the bar's length is its value: no inline style
    track.className = "class-bar-track";
    track.max = total;
    track.value = row.count;
    track.textContent = `${row.count} / ${total}`;
    const count = document.createElement("span");
    count.className = "class-bar-count";
    count.textContent = String(row.count);
    line.append(label, track, count);
    box.append(line);
  }
  if (view.revealed && bars.length && bars.every((b) => b.correct === null)) {
    const note = document.createElement("p");
    note.className = "class-note";
    note.textContent = t("class_unchecked");
    box.append(note);
  }
}
