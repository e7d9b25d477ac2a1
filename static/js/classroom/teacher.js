// The teacher's page (/class/teach): start a class, show its code, join link and QR code on the projector,
// ask a chapter's question, watch the count and the distribution of answers live (no names), reveal, download
// the CSV, end. The teacher's key stays in an HttpOnly cookie; the teacher's link carries it in its #fragment
// (never sent to a server by a browser), which this page trades for the cookie and then wipes from the address bar.

import { replaceAddress } from "../shared/page.js";
import { CHAPTERS, LANG, api, chapterTitle, drawBars, drawQuestion, follow, say, showMessage, t } from "./common.js";

const $ = (id) => document.getElementById(id);
// the page's one mutable state: the class on screen, how to stop following it, an armed End button
const state = { code: new URLSearchParams(location.search).get("code"), stop: null, endArmed: false };

function show(view) {
  $("asked").textContent = view.question ? chapterTitle(view.chapter) : t("class_no_question");
  $("answered").textContent = t("class_answered", { answered: view.answered, students: view.students });
  drawQuestion($("prompt"), view);
  $("reveal").disabled = !view.question || view.revealed;
  $("reveal").textContent = view.revealed ? t("class_revealed") : t("class_reveal");
  drawBars($("bars"), view);
}

function ended() {
  if (state.stop) state.stop();
  $("class-running").hidden = true;
  $("class-start").hidden = false;
  showMessage(t("class_ended"));
  replaceAddress(`/class/teach?lang=${LANG}`);
  state.code = null;
}

async function open(view) {
  state.code = view.code;
  $("class-start").hidden = true;
  $("class-running").hidden = false;
  $("code").textContent = state.code;
  $("join-url").textContent = t("class_join_at", { url: view.join_url });
  $("qr").src = `/api/classes/${state.code}/qr.svg`;
  $("csv").href = `/api/classes/${state.code}/answers.csv`;
  if (view.teacher_link) $("teacher-link").textContent = view.teacher_link;
  replaceAddress(`/class/teach?code=${state.code}&lang=${LANG}`); // the key never stays on screen
  if (view.chapter) { $("chapter").value = view.chapter; await listQuestions(view.question); }
  show(view);
  state.stop = follow(`/api/classes/${state.code}/events?role=teacher`, {
    onState: show,
    onEnded: ended,
    check: async () => {
      try { show(await api("GET", `/api/classes/${state.code}`)); return true; } catch (error) {
        if (error.code === "unknown_class") { ended(); return false; }
        return true;
      }
    },
  });
}

/** The chapter's questions, as the lessons ask them on its view in the class's language. */
async function listQuestions(selected) {
  const select = $("question");
  select.replaceChildren();
  $("ask").disabled = true;
  const chapter = $("chapter").value;
  const data = await api("GET", `/api/lessons/${encodeURIComponent(chapter)}/questions?lang=${LANG}`);
  if ($("chapter").value !== chapter) return; // the teacher picked another chapter meanwhile
  for (const question of data.questions) {
    const option = document.createElement("option");
    option.value = question.id;
    option.textContent = question.prompt.length > 90 ? `${question.prompt.slice(0, 88)}…` : question.prompt;
    select.append(option);
  }
  if (selected) select.value = selected;
  $("ask").disabled = !data.questions.length;
}

async function act(work) {
  try { showMessage(""); await work(); } catch (error) { showMessage(say(error)); }
}

async function boot() {
  for (const [index, chapter] of CHAPTERS.entries()) {
    const option = document.createElement("option");
    option.value = chapter.id;
    option.textContent = `${index + 1}. ${chapter.title}`;
    $("chapter").append(option);
  }
  $("chapter").addEventListener("change", () => act(() => listQuestions()));
  $("start").addEventListener("click", () => act(async () => {
    const started = await api("POST", "/api/classes", { lang: LANG });
    await open({ ...(await api("GET", `/api/classes/${started.code}`)), teacher_link: started.teacher_link });
    await listQuestions();
  }));
  $("step-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(async () => show(await api("POST", `/api/classes/${state.code}/step`, { chapter: $("chapter").value, question: $("question").value })));
  });
  $("reveal").addEventListener("click", () => act(async () => show(await api("POST", `/api/classes/${state.code}/reveal`))));
  $("end").addEventListener("click", () => act(async () => {
    if (!state.endArmed) { // a second click ends it: no dialog on a projector
      state.endArmed = true;
      $("end").textContent = t("class_end_confirm");
      setTimeout(() => { state.endArmed = false; $("end").textContent = t("class_end"); }, 5000);
      return;
    }
    await api("POST", `/api/classes/${state.code}/end`);
    ended();
  }));
  if (!state.code) { $("class-start").hidden = false; return; }
  const key = new URLSearchParams(location.hash.slice(1)).get("key");
  await act(async () => {
    if (key) await api("POST", `/api/classes/${state.code}/teacher`, undefined, { "X-Class-Key": key });
    await open(await api("GET", `/api/classes/${state.code}`));
  });
  if ($("class-running").hidden) $("class-start").hidden = false;
}

boot();
