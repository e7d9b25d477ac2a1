// Predict, then reveal (issue 42): a chapter's questions (GET /api/lessons/<id>/questions, asked on the view on
// screen), each behind a "Predict" button in the lesson bar's "look at" line. Opening one masks the chart with the
// question and its answers (a token, a block or "never", a choice, a number); answering reveals the chart with
// the measured value, right or wrong, and the one line on why. The answer is checked here, on the page, exactly as
// lessons/questions.py verdict() checks it on a server: a student alone needs no server state, and the static
// site no answer it did not record (without a recorded answer there are no questions, and nothing breaks).

import { h, visible } from "./shared/dom.js";
import { state } from "./state.js";

// what the student answered (state.predicted: view + question -> {given, correct}: this page's own, never sent
// anywhere) and the question whose answers mask the chart (state.predicting: {chapter, id}) live in state.js

/** The questions of the chapter on screen, as the server asked them on this view (navigate.js loadQuestions). */
function current(c) {
  const got = state.questions;
  if (!got || got.chapter !== c.id || got.lang !== state.lang || !got.answer) return [];
  return got.answer.questions.filter((q) => q.defined);
}

function key(q) {
  const a = state.questions.answer;
  return JSON.stringify([a.chapter, a.lang, a.model, a.text, a.target, a.layer, a.head, q.id]);
}

/** The answer a student gave, as the question takes it, or null (the same rules as lessons/questions.py). */
export function parseAnswer(q, raw) {
  const values = q.options.flatMap((o) => o.positions || [o.value]); // a token: any of its character's tokens
  if (q.answer_type === "number") {
    const text = String(raw).trim().replace(/[,\s]/g, "");
    const n = text === "" ? NaN : Number(text);
    return Number.isFinite(n) ? n : null;
  }
  if (raw === "never" && values.includes("never")) return "never";
  if (q.answer_type === "token" || q.answer_type === "block") return values.includes(Number(raw)) ? Number(raw) : null;
  return values.includes(raw) ? raw : null;
}

/** Right when it is one of the accepted answers, or, for a number, within the tolerance of the measured count. */
export function isRight(q, given) {
  if (q.answer_type === "number") return Math.abs(given - q.answer) <= q.tolerance;
  return q.accepted.includes(given);
}

function label(q, value) {
  if (q.answer_type === "number") return Number(value).toLocaleString("en");
  const option = q.options.find((o) => o.value === value || (o.positions || []).includes(value));
  if (!option) return String(value);
  const at = (option.positions || [value]).length > 1 ? `${option.positions[0]}–${option.positions.at(-1)}` : value;
  return q.answer_type === "token" ? `“${visible(option.word || option.label)}” (${at})` : option.label;
}

/** The buttons in the "look at" line: one per question, marked once answered. */
export function questionButtons(t, c) {
  const qs = current(c);
  return qs.flatMap((q, i) => {
    const done = state.predicted[key(q)];
    const mark = done ? (done.correct ? " ✓" : " ✗") : "";
    const text = `${t("question_predict")}${qs.length > 1 ? ` ${i + 1}` : ""}${mark}`;
    return [" ", h("button", { type: "button", class: `small predict${done ? " predict-done" : ""}`, "data-question": q.id, text, onclick: () => ask(q.id) })];
  });
}

/** The reveal's lines under the "look at" line: each answered question, right or wrong, measured, and why. */
export function questionResults(t, c) {
  return current(c).flatMap((q) => {
    const done = state.predicted[key(q)];
    if (!done) return [];
    const verdict = done.correct ? t("question_right") : t("question_wrong", { given: label(q, done.given), answer: label(q, q.answer) });
    return [h("p", { class: `question-result ${done.correct ? "question-right" : "question-wrong"}`, "data-result": q.id }, h("strong", { text: `${verdict} ` }), q.why)];
  });
}

/** Mask the chart with question `id` and its answers (or take the mask away: `id` null). */
export function ask(id) {
  state.predicting = id === null || !state.questions ? null : { chapter: state.questions.chapter, id };
  drawMask();
}

/** After each render: the mask over the chart while a question is open (the panel under it may be redrawn). */
export function drawMask() {
  const stage = document.getElementById("stage");
  const panel = document.getElementById("panel");
  const old = document.getElementById("question-mask");
  if (old) old.remove();
  const c = state.questions && state.questions.answer;
  const open = state.predicting;
  const q = c && open && open.chapter === state.questions.chapter ? current({ id: open.chapter }).find((x) => x.id === open.id) : null;
  document.body.classList.toggle("predicting", Boolean(q));
  if (!q || !stage || !panel) return;
  const t = state.texts[state.lang].t;
  const mask = h(
    "div",
    { id: "question-mask", class: "question-mask", role: "dialog", "aria-label": t("question_predict"), "data-question": q.id },
    h("p", { class: "question-prompt", text: q.prompt }),
    answers(t, q),
    h("button", { type: "button", class: "small question-skip", text: t("question_skip"), onclick: () => ask(null) }),
  );
  // over the chart, not above it: the chart keeps its place on the first screen
  Object.assign(mask.style, { top: `${panel.offsetTop}px`, left: `${panel.offsetLeft}px`, width: `${panel.offsetWidth}px`, minHeight: `${Math.max(panel.offsetHeight, 160)}px` });
  stage.append(mask);
}

function answers(t, q) {
  const choose = (value) => () => reveal(q, value);
  if (q.answer_type === "number") {
    const input = h("input", { type: "text", inputmode: "numeric", class: "question-number", "aria-label": q.prompt, autocomplete: "off" });
    const form = h("form", { class: "question-answers", onsubmit: (event) => { event.preventDefault(); reveal(q, input.value); } },
      input, " ", h("button", { type: "submit", class: "primary small", text: t("question_check") }));
    requestAnimationFrame(() => input.focus());
    return form;
  }
  return h("div", { class: `question-answers answers-${q.answer_type}` },
    q.options.map((o) => h("button", { type: "button", class: "small question-option", "data-value": String(o.value), text: q.answer_type === "token" ? visible(o.word || o.label) : o.label, onclick: choose(o.value) })));
}

function reveal(q, raw) {
  const given = parseAnswer(q, raw);
  if (given === null) {
    const input = document.querySelector("#question-mask .question-number");
    if (input) input.setCustomValidity(state.texts[state.lang].t("question_not_number"));
    if (input) input.reportValidity();
    return;
  }
  state.predicted[key(q)] = { given, correct: isRight(q, given) };
  state.predicting = null;
  document.dispatchEvent(new CustomEvent("question-answered", { detail: q.id })); // render.js redraws the bar
}
