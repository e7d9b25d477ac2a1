// A student's page (/class?code=): join with a nickname, then follow the teacher: the question asked now, the
// answer sent (changeable until the reveal), and after the reveal the class's distribution and whether this
// student's answer was right. The student's token is an HttpOnly cookie of this class's API path.

import { replaceAddress } from "../shared/page.js";
import { LANG, answerLabel, api, chapterTitle, drawBars, drawQuestion, follow, say, showMessage, t } from "./common.js";

const $ = (id) => document.getElementById(id);
// the page's one mutable state: the class, the question on screen (and its key), the last live state's key
const state = { code: (new URLSearchParams(location.search).get("code") || "").toUpperCase(), shown: "", question: null, last: null };

/** A question with options (tokens, blocks, choices) is answered by a click; a number is typed. */
function drawChoices(asked) {
  const box = $("choices");
  box.replaceChildren();
  const options = (asked && asked.options) || [];
  $("answer-field").hidden = options.length > 0;
  $("send").hidden = options.length > 0;
  for (const option of options) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "class-choice";
    button.dataset.value = String(option.value);
    button.textContent = answerLabel(asked, option.value); // text, never HTML
    button.addEventListener("click", () => send(String(option.value)));
    box.append(button);
  }
}

async function send(value) {
  try {
    showMessage("");
    const sent = await api("POST", `/api/classes/${state.code}/answers`, { value });
    $("mine").textContent = t("class_sent", { value: answerLabel(state.question, sent.value) });
    for (const button of $("choices").children) button.classList.toggle("chosen", button.dataset.value === sent.value);
  } catch (error) { showMessage(say(error)); }
}

function render(view) {
  $("join-form").hidden = true;
  $("class-joined").hidden = false;
  $("hello").textContent = t("class_hello", { nickname: view.nickname }); // text, never HTML
  const asked = view.question ? `${view.chapter}/${view.question}` : "";
  $("asked").textContent = view.question ? chapterTitle(view.chapter) : t("class_wait");
  drawQuestion($("prompt"), view);
  $("answer-form").hidden = !view.asked || view.revealed;
  if (asked !== state.shown) { $("answer").value = ""; drawChoices(view.asked); }
  state.shown = asked;
  state.question = view.asked;
  const mine = view.mine;
  let line = "";
  if (mine && view.revealed) {
    const verdict = mine.correct === true ? t("class_correct") : mine.correct === false ? t("class_wrong") : "";
    line = `${t("class_you_answered", { value: answerLabel(view.asked, mine.value) })}${verdict ? ` (${verdict})` : ""}`;
  } else if (mine) line = t("class_sent", { value: answerLabel(view.asked, mine.value) });
  for (const button of $("choices").children) button.classList.toggle("chosen", !!mine && button.dataset.value === String(mine.value));
  $("mine").textContent = line;
  $("answered").textContent = view.question ? t("class_answered", { answered: view.answered, students: view.students }) : "";
  drawBars($("bars"), view.revealed ? view : { distribution: [], answered: 0 });
  const link = $("open-chapter");
  link.hidden = !view.chapter;
  if (view.chapter) link.href = `/?chapter=${encodeURIComponent(view.chapter)}&lang=${LANG}`;
}

function ended() {
  $("class-joined").hidden = true;
  $("answer-form").hidden = true;
  showMessage(t("class_ended"));
}

async function refresh() {
  try { render(await api("GET", `/api/classes/${state.code}/me`)); return true; } catch (error) {
    if (error.code === "unknown_class") { ended(); return false; }
    if (error.code === "not_student") { $("join-form").hidden = false; return false; }
    showMessage(say(error));
    return true;
  }
}

function followClass() {
  follow(`/api/classes/${state.code}/events?role=student`, {
    onState: (view) => { // the class moved: this student's own view (their answer) is read again
      const key = `${view.chapter}/${view.question}/${view.revealed}`;
      if (key !== state.last) { state.last = key; refresh(); } else $("answered").textContent = view.question ? t("class_answered", { answered: view.answered, students: view.students }) : "";
    },
    onEnded: ended,
    check: refresh,
  });
}

async function boot() {
  $("code-input").value = state.code;
  $("join-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    showMessage("");
    try {
      const joined = await api("POST", `/api/classes/${encodeURIComponent($("code-input").value.replace(/\s/g, "").toUpperCase() || "-")}/students`,
        { nickname: $("nickname").value });
      state.code = joined.code;
      replaceAddress(`/class?code=${state.code}&lang=${LANG}`);
      if (await refresh()) followClass();
    } catch (error) { showMessage(say(error)); }
  });
  $("answer-form").addEventListener("submit", (event) => {
    event.preventDefault();
    send($("answer").value);
  });
  if (state.code && await refresh()) followClass();
  else if (!state.code) $("join-form").hidden = false;
}

boot();
