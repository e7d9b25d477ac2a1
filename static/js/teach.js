// What a teacher sees besides the stage: the lesson bar (chapter, "what to look at", back/forward),
// the parameters sheet and the architectures sheet. Drawn from the committed state; clicks are
// data-go buttons that events.js turns into go() calls. Every number comes from params.js.

import { CHAPTER_LINKS, CHAPTERS, labPanel, labURL, PRESENT_KEEPS } from "./lessons.js";
import { blockParts, count, componentShares, fullAttention } from "./params.js";
import { h } from "./shared/dom.js";
import { state } from "./state.js";
import { drawArch } from "./archview.js";
import { questionButtons, questionResults } from "./questions.js";
import { chapterKicker, chapterMenu } from "./lesson_tools.js";
import { stageVars } from "./context.js";

const $ = (id) => document.getElementById(id);
const pct = (x) => `${(100 * x).toFixed(1)}%`;

/** The lesson bar above the stage (hidden while exploring freely). */
export function renderLesson(t) {
  const bar = $("lesson");
  const on = state.chapter !== null && state.chapter !== undefined;
  document.body.classList.toggle("in-lesson", on);
  document.body.dataset.keep = on ? PRESENT_KEEPS[CHAPTERS[state.chapter].id] || "" : ""; // app.css: kept on a projector
  if (!on) {
    bar.hidden = true;
    bar.replaceChildren();
    return;
  }
  const c = CHAPTERS[state.chapter];
  const opened = bar.dataset.chapter !== c.id || bar.hidden;
  const words = lessonText(state.texts[state.lang], state.info, state.tokens || [], state.model, c.id, { layer: state.layer, head: state.head });
  const say = (field) => words[field];
  bar.hidden = false;
  bar.dataset.chapter = c.id;
  bar.replaceChildren(
    h(
      "div",
      { class: "lesson-head" },
      chapterKicker(t),
      chapterMenu(t, say("title")), // the title is the menu of every chapter (lesson_tools.js)
      h(
        "span",
        { class: "lesson-nav" },
        h("button", { type: "button", id: "chapter-prev", "data-chapter": "-1", disabled: state.chapter === 0 ? true : undefined, text: t("chapter_prev") }),
        h("button", { type: "button", id: "chapter-next", class: "primary", "data-chapter": "1", disabled: state.chapter === CHAPTERS.length - 1 ? true : undefined, text: t("chapter_next") }),
        h("button", { type: "button", id: "chapter-share", "data-share": "card", text: t("share") }),
        h("button", { type: "button", id: "lesson-exit", "data-chapter": "exit", text: t("lesson_exit") }),
      ),
    ),
    lessonBody(say("body")),
    // chapter 1's table and its live links share the column beside its text, so the chart stays on the first screen
    ...(c.id === "why" ? [h("div", { class: "lesson-side" }, recurrenceTable(t, state.tokens || [], state.info), ...liveLinks(t, c))] : []),
    h("p", { class: "lesson-look" }, h("strong", { text: `${t("look_at")} ` }), say("look"), ...labLink(t), ...otherModel(t, c), ...questionButtons(t, c)),
    ...questionResults(t, c),
    ...claimLines(t, c),
    ...(c.id === "why" ? [] : liveLinks(t, c)),
  );
  // a chapter just opened starts at its lesson bar, so the chart is on the first screen (1280×720)
  if (opened && !state.present) requestAnimationFrame(() => bar.scrollIntoView({ block: "start" })); // after the chart is drawn below
}

/** On a projector, a chapter whose points are its subject (PRESENT_KEEPS "points") keeps them under the chart. */
export function keptPoints() {
  if (!state.present || document.body.dataset.keep !== "points") return null;
  const c = CHAPTERS[state.chapter];
  const words = lessonText(state.texts[state.lang], state.info, state.tokens || [], state.model, c.id, { layer: state.layer, head: state.head });
  const body = lessonBody(words.body);
  return body.tagName === "OL" ? h("div", { class: "lesson-kept" }, h("strong", { text: words.title }), body) : null;
}

/** A chapter's body: a paragraph, or a numbered list when the text numbers its points ("1. … 2. …"). */
function lessonBody(text) {
  // a point starts after a space, or right after a Chinese full stop (Chinese puts no space there)
  const items = String(text).split(/(?:^|\s+|(?<=。))(?=[1-9]\.\s)/).filter((x) => x.trim());
  if (items.length < 3 || !/^1\.\s/.test(items[0])) return h("p", { class: "lesson-body", text });
  return h("ol", { class: "lesson-body lesson-points" }, items.map((x) => h("li", { text: x.replace(/^[1-9]\.\s+/, "") })));
}

/**
 * A chapter's title, body and "what to look at" for the model on screen: each field's variant for
 * its norm placement (lesson.<id>.<field>.post / .pre) or architecture (.decoder, .encoder,
 * .encoder-decoder) or positional encoding (.rope, .alibi, ...) when the text file has one, else the plain key; numbers from the model and the
 * sentence's `tokens` ({n_tokens}, {d_model}, ...), {model}: its name, and `where` the view's {layer} and {head}.
 */
export function lessonText(texts, info, tokens, model, id, where = {}) {
  const placement = info && info.config.norm_placement === "post" ? "post" : "pre";
  const vars = info ? { ...stageVars(info, tokens, {}, texts.list), ...where, model } : { ...where, model };
  const out = {};
  for (const field of ["title", "body", "look"]) {
    const base = `lesson.${id}.${field}`;
    const variants = info ? [`${base}.${placement}`, `${base}.${info.architecture}`, `${base}.${info.config.pos_encoding}`] : [];
    out[field] = texts.t(variants.find((k) => texts.has(k)) || base, vars);
  }
  return out;
}

/**
 * "Why attention replaced RNNs" on the learner's own sentence: what a recurrent layer and one
 * self-attention layer must do for its n tokens, counted from the two formulas (h_t = f(h_(t−1), x_t)
 * against softmax(QKᵀ/√d_k)·V), not measured; the caption says so.
 */
export function recurrenceCounts(n, causal) {
  return {
    n,
    rnn_steps: n, // h_1 … h_n, each waits for the one before
    attn_steps: 1, // every row of QKᵀ at once
    rnn_path: Math.max(0, n - 1), // first → last token: through every state in between
    attn_path: n > 1 ? 1 : 0, // the last query reads the first key directly
    attn_pairs: causal ? (n * (n + 1)) / 2 : n * n, // scores computed (causal: the visible half)
  };
}

function recurrenceTable(t, tokens, info) {
  const c = recurrenceCounts(tokens.length, !info || info.architecture !== "encoder");
  const d = info ? info.config.d_model : 0;
  const rows = [
    [t("rnn_row_steps"), String(c.rnn_steps), String(c.attn_steps)],
    [t("rnn_row_path"), String(c.rnn_path), String(c.attn_path)],
    [t("rnn_row_pairs"), "0", String(c.attn_pairs)],
    [t("rnn_row_memory"), t("rnn_memory_rnn", { d_model: d }), t("rnn_memory_attn", { n: c.n })],
  ];
  return h(
    "table",
    { class: "sheet-table lesson-demo", "data-n": c.n },
    h("caption", { text: t("rnn_caption", { n: c.n }) }),
    h("thead", {}, h("tr", {}, [t("rnn_col_what"), t("rnn_col_rnn"), t("rnn_col_attn")].map((x) => h("th", { text: x })))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((x) => h("td", { text: x }))))),
  );
}

/**
 * What the chapter asks the class to see, measured (GET /api/lessons/<id>/claims): one line per claim, its values
 * filled in on the server, in up to three groups. "Measured on screen": the chart's claims, measured on the view
 * on screen (again, once the class changed the sentence, model, layer or head). "Measured in the lab": claims whose
 * numbers a lab panel draws, each linked to it. "On the lesson's sentence": a chart's claim the view on screen
 * cannot carry (its words are not in the sentence), with one click back to the lesson's sentence. No line is ever
 * called measured on screen when it was measured on another view. On a server without the chapter's model the
 * chapter opens on another model of its kind, and says that its measured claims are not shown.
 */
function claimLines(t, c) {
  const answer = state.claims;
  if (!answer || answer.chapter !== c.id || answer.lang !== state.lang) return [];
  const { lesson, view, differs } = answer;
  const count = Math.max(lesson ? lesson.claims.length : 0, view ? view.claims.length : 0);
  const groups = { screen: [], lab: [], lesson: [] };
  for (let i = 0; i < count; i++) {
    const measuredHere = differs ? view && view.claims[i] : lesson && lesson.claims[i];
    const own = lesson && lesson.claims[i];
    if (measuredHere && measuredHere.on_view && !measuredHere.panel) groups.screen.push(claimItem(measuredHere, "screen", null, !differs));
    else if (own && own.panel) groups.lab.push(claimItem(own, "lab", labClaimLink(t, c, own.panel, lesson)));
    else if (own) groups.lesson.push(claimItem(own, "lesson"));
  }
  const group = (name, key, extra = []) =>
    groups[name].length
      ? [h("div", { class: `lesson-claims claims-${name}`, "data-claims": name }, h("strong", { text: `${t(key)} ` }), h("ul", {}, groups[name]), ...extra)]
      : [];
  const back = h("button", { type: "button", class: "small claims-back", "data-chapter": "0", text: t("lesson_back") });
  return [
    ...group("screen", "lesson_measured"),
    ...group("lesson", "lesson_measured_lesson", [back]),
    ...group("lab", differs ? "lesson_measured_lab_lesson" : "lesson_measured_lab", groups.lesson.length || !differs ? [] : [back]),
  ];
}

function claimItem(claim, place, link = null, own = true) {
  // a claim that fails on the chapter's own view is marked; on the class's sentence its line says what was measured
  const cls = `claim claim-${place}${claim.holds || !own ? "" : " claim-fails"}`;
  return h("li", { class: cls, "data-kind": claim.kind, "data-place": place }, claim.line, ...(link ? [" ", link]: []));
}

/** A lab claim's link: its panel on the lesson's model and sentence (the numbers it quotes), with the chapter's
 * own fields for that panel (CHAPTER_LINKS: activation patching's pair of prompts). */
function labClaimLink(t, c, panel, lesson) {
  const fields = ((CHAPTER_LINKS[c.id] || []).find((l) => l.lab === panel) || {}).fields || {};
  const href = labURL(panel, { model: lesson.model, text: lesson.text, lang: state.lang }, fields);
  return h("a", { class: "lab-link claim-lab", href, text: `${t("lesson_lab_open")}: ${t(`lab_panel_${panel}`)}` });
}

/** On a server without the chapter's model: a short aside in the look line, naming the model its claims need. */
function otherModel(t, c) {
  const wanted = c[state.lang === "zh" ? "zh" : "en"].model;
  return wanted === state.model ? [] : [" ", h("span", { class: "lesson-claims-missing", text: t("lesson_other_model", { wanted, model: state.model }) })];
}

function labLink(t) {
  const panel = labPanel(null, state.chapter);
  if (!panel) return [];
  return [" ", h("a", { class: "lab-link", id: "lesson-lab-link", href: labURL(panel, state), text: t("lab_link", { panel: t(`lab_panel_${panel}`) }) })];
}

/** The model and sentence a lab link opens: the chapter's, unless the link needs another architecture. */
function linkState(link) {
  const named = link.model && (state.models || []).find((m) => m.name === link.model);
  if (named) return { ...state, model: named.name, text: link.text || state.text };
  if (!link.arch || (state.info && state.info.architecture === link.arch)) return state;
  const model = (state.models || []).find((m) => m.architecture === link.arch && !(m.meta && m.meta.pe_family));
  return model ? { ...state, model: model.name, text: link.text || state.text } : state;
}

/** A chapter's live links (lessons.js CHAPTER_LINKS): buttons that open a view here, links to a lab panel. */
function liveLinks(t, c) {
  const links = CHAPTER_LINKS[c.id];
  if (!links) return [];
  const words = state.texts[state.lang];
  const item = (link) => {
    const text = words.t(`lesson.${c.id}.link.${link.id}`);
    if (link.lab) return h("a", { class: "live-link", "data-live": link.id, href: labURL(link.lab, linkState(link), link.fields), text });
    return h("button", { type: "button", class: "small live-link", "data-live": link.id, text });
  };
  return [h("p", { class: "lesson-live" }, h("strong", { text: `${t("lesson_live")} ` }), ...links.map(item))];
}

function table(head, rows, className = "") {
  return h(
    "table",
    { class: `sheet-table ${className}` },
    h("thead", {}, h("tr", {}, head.map((x) => h("th", { text: x })))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((x) => h("td", { text: String(x) }))))),
  );
}

/** Per-component counts and shares, one block by part, multi-head against one full-width head, GQA's saving. */
function paramsSheet(t) {
  const info = state.info;
  const total = info.parameters ? info.parameters.total : 0;
  const norms = info.config.norm === "rmsnorm" ? "param_norms_rms" : "param_norms";
  const comps = componentShares(info).map((c) => [t(c.name === "norms" ? norms : `param_${c.name}`), count(c.count), pct(c.share)]);
  const stacks = Object.keys(state.plan.layers);
  const blocks = stacks.map((stack) => {
    const p = blockParts(info, stack, state.plan.layers[stack][0]);
    const name = stack ? t(stack) : t("block", { n: 0 });
    return [name, count(p.total), count(p.attn), count(p.cross), `${count(p.ffn)} (${pct(p.ffn / (p.total || 1))})`, count(p.norms)];
  });
  const first = blockParts(info, stacks[0], state.plan.layers[stacks[0]][0]);
  const full = fullAttention(info);
  const d = info.config.d_model;
  const heads = t("params_heads", { n_heads: info.n_heads, d_head: info.d_head, d_model: d, full: count(full) });
  const kv =
    info.n_kv_heads === info.n_heads
      ? t("params_mha", { attn: count(first.attn), full: count(full) })
      : t("params_gqa", { kv: info.n_kv_heads, heads: info.n_heads, attn: count(first.attn), full: count(full), saving: count(full - first.attn), cache: info.n_heads / info.n_kv_heads });
  const cfg = info.config;
  const moeLayers = cfg.n_experts ? (cfg.moe_layers ?? [...Array(info.n_layers).keys()]).length : 0;
  const active = info.parameters && info.parameters.active !== undefined
    ? [h("p", { class: "sheet-note params-active", text: t("params_active", {
      used: cfg.n_experts_used, experts: cfg.n_experts, moe_layers: moeLayers, active: count(info.parameters.active), total: count(total) }) }),
    ...(cfg.shared_expert_d_mlp != null ? [h("p", { class: "sheet-note params-active", text: t("params_active_shared", { shared_d_mlp: cfg.shared_expert_d_mlp }) })] : [])]
    : []; // a mixture of experts: what one token's pass uses (model.transformer.parameter_counts), the shared expert too
  return [
    h("h3", { text: t("params_title", { total: count(total) }) }),
    table([t("param_component"), t("param_count"), t("param_share")], comps, "params-components"),
    ...active,
    h("h4", { text: t("params_block_title") }),
    table([t("param_stack"), t("param_block"), t("param_attn"), t("param_cross"), t("param_ffn"), t("param_norms_short")], blocks, "params-blocks"),
    h("p", { class: "sheet-note", text: heads }),
    h("p", { class: "sheet-note params-kv", text: kv }),
  ];
}

/** Every loaded model side by side: mask, where cross-attention reads, training objective. */
function archSheet(t) {
  const rows = state.models.map((m) => {
    const cfg = m.config || {};
    const arch = m.architecture;
    const mask = arch === "encoder" ? t("arch_mask_bi") : arch === "decoder" ? t("arch_mask_causal") : t("arch_mask_both");
    const windowed = cfg.sliding_window ? ` ${t("arch_window", { window: cfg.sliding_window })}` : "";
    return [m.name, t(`arch_kind_${arch}`), mask + windowed, t(`arch_cross_${arch}`), t(`arch_objective_${arch}`)];
  });
  const open = state.models.map((m) =>
    h("button", { type: "button", class: "small", "data-open-model": m.name, text: t("arch_open", { name: m.name }) }),
  );
  return [
    h("h3", { text: t("arch_title") }),
    table([t("model"), t("arch_col_kind"), t("arch_col_mask"), t("arch_col_cross"), t("arch_col_objective")], rows, "arch-table"),
    h("p", { class: "sheet-note", text: t("arch_same_sentence") }),
    h("p", { class: "sheet-actions" }, open),
  ];
}

export function renderSheet(t, archData = null) {
  const sheet = $("sheet");
  const opened = Boolean(state.sheet) && sheet.dataset.sheet !== state.sheet;
  sheet.hidden = !state.sheet;
  sheet.dataset.sheet = state.sheet || "";
  if (!state.sheet) return sheet.replaceChildren();
  const body = state.sheet === "params" ? paramsSheet(t) : archSheet(t);
  sheet.replaceChildren(h("button", { type: "button", class: "small sheet-close", "data-sheet": "", text: t("close") }), ...body);
  if (state.sheet === "arch") drawArch(sheet, archData, t); // live charts: drawn once their divs are in the page
  // the sheet sits below the stage (a chapter's chart comes first); opened by its button, it is brought into view
  if (opened && (state.chapter === null || state.chapter === undefined)) requestAnimationFrame(() => sheet.scrollIntoView({ block: "start" }));
  return sheet;
}

/** The model's own example, offered when the sentence uses characters none of its examples has. */
export function exampleOffer(info, text) {
  const examples = info.meta && info.meta.examples;
  if (!examples || typeof examples !== "object" || Array.isArray(examples)) return null;
  const keys = Object.keys(examples);
  const known = new Set(keys.join(""));
  if (!keys.length || keys.includes(text) || [...text].every((ch) => known.has(ch))) return null;
  return { text: keys[0], target: String(examples[keys[0]]) };
}
