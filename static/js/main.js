// The explorer: one state object, one render() that redraws from it, one panel per stage kind.
// Navigation builds the next state, loads what that view needs (cached), and only then commits:
// if anything fails, a message appears and the last good view stays on screen.

import { api, ApiError } from "./api.js";
import { Board } from "./board.js";
import { lang, setLang, stepText, t } from "./i18n.js";
import attention from "./panels/attention.js";
import ffn from "./panels/ffn.js";
import logits from "./panels/logits.js";
import norm from "./panels/norm.js";
import positional from "./panels/positional.js";
import qkv from "./panels/qkv.js";
import tokens, { tokenChips } from "./panels/tokens.js";
import vectors from "./panels/vectors.js";
import { h } from "./plot.js";
import { buildPlan, indexOf, namesFor } from "./stages.js";

const PANELS = { attention, ffn, logits, norm, positional, qkv, tokens, vectors };
const $ = (id) => document.getElementById(id);

let state = {
  lang: "en",
  models: [],
  model: null,
  info: null,
  plan: null,
  text: "",
  target: "",
  tokens: [],
  targetTokens: null,
  index: 0,
  layer: 0,
  head: 0,
  view: "head",
  compare: false,
  token: null,
  present: false,
  snapshot: null, // a training step from meta.snapshots; null: the final weights
};
let generation = 0;
let board = null;

// ------------------------------------------------------------------ URL

function readURL() {
  const p = new URLSearchParams(location.search);
  const int = (key) => (p.has(key) && /^\d+$/.test(p.get(key)) ? Number(p.get(key)) : undefined);
  return {
    model: p.get("model") || undefined,
    text: p.has("text") ? p.get("text") : undefined,
    target: p.get("target") || "",
    stage: p.get("stage") || undefined,
    layer: int("layer"),
    head: int("head"),
    view: ["head", "heads", "layers"].includes(p.get("view")) ? p.get("view") : "head",
    lang: p.get("lang") || undefined,
    present: p.get("present") === "1",
    compare: p.get("cmp") === "1",
    snapshot: int("snap") ?? null,
  };
}

function writeURL(s) {
  const at = s.plan.order[s.index];
  const p = new URLSearchParams();
  p.set("model", s.model);
  p.set("text", s.text);
  if (s.target) p.set("target", s.target);
  p.set("stage", at.id);
  if (at.layer !== null) p.set("layer", String(at.layer));
  p.set("head", String(s.head));
  if (s.view !== "head") p.set("view", s.view);
  p.set("lang", s.lang);
  if (s.present) p.set("present", "1");
  if (s.compare) p.set("cmp", "1");
  if (s.snapshot !== null && s.snapshot !== undefined) p.set("snap", String(s.snapshot));
  history.replaceState(null, "", `${location.pathname}?${p}`);
}

// ------------------------------------------------------------------ context for panels

function requestBody(s) {
  const body = { model: s.model, text: s.text };
  if (s.info && s.info.architecture === "encoder-decoder" && s.target) body.target_text = s.target;
  if (s.snapshot !== null && s.snapshot !== undefined) body.snapshot = s.snapshot;
  return body;
}

function makeContext(s) {
  const at = s.plan.order[s.index];
  const step = s.plan.steps.get(at.id);
  const cfg = s.info.config;
  const encdec = s.info.architecture === "encoder-decoder";
  const onDecoder = encdec && step.stack !== "encoder";
  const toks = onDecoder ? s.targetTokens || [] : s.tokens;
  const layers = s.plan.layers[step.stack] || [];
  const panel = PANELS[step.panel];
  let view = s.view;
  if (!panel.hasHeads || (view === "layers" && !panel.hasLayers) || step.key === "pos" || !step.block) view = "head";
  const dHead = s.info.d_head;
  const kv = s.info.n_kv_heads;
  const vars = {
    tokenizer: s.info.tokenizer,
    vocab: s.info.vocab_size,
    n: toks.length,
    d_model: cfg.d_model,
    heads: s.info.n_heads,
    d_head: dHead,
    sqrt: Math.sqrt(dHead).toFixed(2),
    kv,
    d_mlp: cfg.d_mlp || 4 * cfg.d_model,
    n_ctx: cfg.n_ctx,
    norm: cfg.norm,
    placement: cfg.norm_placement,
    act: cfg.activation,
    pos: cfg.pos_encoding,
    arch: s.info.architecture,
    causal: step.stack !== "encoder" && s.info.architecture !== "encoder",
    tied: cfg.tied_embeddings && cfg.lm_head,
    last: at.layer !== null && at.layer === layers[layers.length - 1],
  };
  const layerPart = at.layer === null ? "" : `_L${at.layer}`;
  return {
    model: s.model,
    info: s.info,
    cfg,
    plan: s.plan,
    step,
    layer: at.layer,
    head: s.head,
    view,
    compare: s.compare,
    token: s.token,
    names: namesFor(step, at.layer ?? 0),
    tokens: toks,
    sourceTokens: s.tokens,
    targetTokens: s.targetTokens,
    req: requestBody(s),
    vars,
    fname: `${s.model}_${step.id}${layerPart}`,
    go,
    headLabel: (head) => headLabel(s.info, step, at.layer, head),
  };
}

/** What the checkpoint's head scores (meta.head_scores) say about one self-attention head, if anything. */
function headLabel(info, step, layer, head) {
  const scores = info.meta && info.meta.head_scores;
  if (!Array.isArray(scores) || layer === null || step.key.startsWith("cross_") || !step.block) return null;
  const entry = scores.find(
    (e) => e && e.layer === layer && e.head === head && (e.stack || "") === (step.stack || "") && e.label,
  );
  if (!entry || !UI_PATTERNS.includes(entry.label)) return null;
  const score = entry.scores && typeof entry.scores[entry.label] === "number" ? entry.scores[entry.label] : null;
  return { label: entry.label, score };
}

const UI_PATTERNS = ["previous-token", "first-token", "self", "duplicate-token", "induction"];

// ------------------------------------------------------------------ navigation

function resolveIndex(next, patch, planChanged) {
  const order = next.plan.order;
  if (typeof patch.index === "number") return Math.max(0, Math.min(order.length - 1, patch.index));
  const current = state.plan && state.plan.order[state.index];
  if ("stage" in patch || "layer" in patch || planChanged) {
    const id = patch.stage ?? (current ? current.id : order[0].id);
    const layer = patch.layer ?? (current && current.layer !== null ? current.layer : next.layer);
    return indexOf(next.plan, id, layer);
  }
  return Math.min(next.index, order.length - 1);
}

/** Build the next state, load what it shows, then commit and render (or keep the old view). */
async function go(patch) {
  const mine = ++generation;
  const next = { ...state, ...patch };
  document.body.classList.add("busy");
  try {
    let planChanged = false;
    if (next.model !== state.model || !next.info) {
      next.info = await api.model(next.model);
      next.plan = buildPlan(next.info);
      planChanged = true;
    }
    if (next.snapshot !== null && next.snapshot !== undefined && !snapshotsOf(next.info).some((x) => x.step === next.snapshot)) {
      next.snapshot = null; // this model has no snapshot at that step: its final weights
    }
    if (!next.text || !next.text.trim()) throw new ApiError(0, "empty_client", "");
    const encdec = next.info.architecture === "encoder-decoder";
    if (planChanged || next.text !== state.text || (encdec && next.target !== state.target) || !next.tokens.length) {
      const answer = await api.tokenize(requestBody(next));
      next.tokens = answer.tokens;
      next.targetTokens = answer.target_tokens || null;
      if (next.text !== state.text) next.token = null;
    }
    next.index = resolveIndex(next, patch, planChanged);
    const at = next.plan.order[next.index];
    if (at.layer !== null) next.layer = at.layer;
    next.head = Math.max(0, Math.min(next.info.n_heads - 1, next.head || 0));
    const ctx = makeContext(next);
    const panel = PANELS[ctx.step.panel];
    const data = await panel.load(ctx);
    if (mine !== generation) return;
    state = next;
    hideMessage();
    render(ctx, panel, data);
    writeURL(state);
  } catch (error) {
    if (mine !== generation) return;
    showError(error);
    console.warn("view not changed:", error); // eslint-disable-line no-console
  } finally {
    if (mine === generation) document.body.classList.remove("busy");
  }
}

function stepBy(delta) {
  if (!state.plan) return;
  const index = state.index + delta;
  if (index < 0 || index >= state.plan.order.length) return;
  go({ index });
}

function layerBy(delta) {
  const at = state.plan && state.plan.order[state.index];
  if (!at || at.layer === null) return;
  const step = state.plan.steps.get(at.id);
  const layers = state.plan.layers[step.stack];
  const i = layers.indexOf(at.layer) + delta;
  if (i >= 0 && i < layers.length) go({ layer: layers[i] });
}

function headBy(delta) {
  if (!state.info) return;
  const n = state.info.n_heads;
  go({ head: (state.head + delta + n) % n });
}

// ------------------------------------------------------------------ messages

function errorText(error) {
  if (!(error instanceof ApiError)) return t("err_generic", { detail: String(error && error.message ? error.message : error) });
  if (error.code === "empty_client" || error.code === "empty_text") return t("err_empty");
  if (error.status === 0 && error.code === "network") return t("err_down");
  if (error.status === 503 || error.status === 429) return t("err_busy");
  if (error.status === 502 || error.status === 504) return t("err_down");
  if (error.status === 413 || /too_long|too_large/.test(error.code)) return t("err_too_long", { detail: error.message });
  return t("err_generic", { detail: error.message });
}

function showError(error) {
  const box = $("message");
  box.replaceChildren(
    h("span", { class: "message-text", text: errorText(error) }),
    h("button", { type: "button", class: "small", text: t("dismiss"), onclick: hideMessage }),
  );
  box.hidden = false;
}

function showNote(text) {
  const box = $("message");
  box.replaceChildren(h("span", { class: "message-text", text }));
  box.classList.add("ok");
  box.hidden = false;
  setTimeout(() => {
    box.classList.remove("ok");
    if (box.textContent === text) box.hidden = true;
  }, 2500);
}

function hideMessage() {
  const box = $("message");
  box.hidden = true;
  box.classList.remove("ok");
  box.replaceChildren();
}

// ------------------------------------------------------------------ render

function applyStaticText() {
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
  $("present").textContent = state.present ? t("exit_present") : t("present");
}

function sectionTitle(section, ctx, plan) {
  const layer = ctx.layer !== null && ctx.step.stack === section.stack ? ctx.layer : Math.min(state.layer, (plan.layers[section.stack] || [0]).slice(-1)[0]);
  if (section.phase === "blocks") {
    if (section.stack === "encoder") return t("encoder_blocks", { n: layer });
    if (section.stack === "decoder") return t("decoder_blocks", { n: layer });
    return t("blocks", { n: layer });
  }
  if (section.stack === "encoder") return `${t("encoder")} · ${section.phase === "pre" ? t("input") : t("output")}`;
  if (section.stack === "decoder") return `${t("decoder")} · ${section.phase === "pre" ? t("input") : t("output")}`;
  if (ctx.info.architecture === "encoder-decoder") return t("output");
  return section.phase === "pre" ? t("input") : t("output");
}

function renderStageList(ctx) {
  const plan = state.plan;
  const list = $("stage-list");
  const groups = plan.sections.map((section) =>
    h(
      "li",
      { class: `stage-group ${section.phase}` },
      h("div", { class: "group-title", text: sectionTitle(section, ctx, plan) }),
      h(
        "ol",
        {},
        section.steps.map((step) =>
          h(
            "li",
            {},
            h("button", {
              type: "button",
              class: `stage-item${step.id === ctx.step.id ? " active" : ""}`,
              "data-stage": step.id,
              "aria-current": step.id === ctx.step.id ? "step" : undefined,
              text: stepText(step.key, ctx.vars).short || stepText(step.key, ctx.vars).title,
              onclick: () => go({ stage: step.id }),
            }),
          ),
        ),
      ),
    ),
  );
  list.replaceChildren(...groups);
}

function renderSelectors(ctx) {
  const layerSel = $("layer");
  const layers = ctx.step.block ? state.plan.layers[ctx.step.stack] : Object.values(state.plan.layers)[0] || [];
  layerSel.replaceChildren(...layers.map((l) => h("option", { value: String(l), text: String(l) })));
  layerSel.disabled = !ctx.step.block;
  layerSel.value = String(ctx.layer !== null ? ctx.layer : Math.min(state.layer, layers.length - 1));
  const headSel = $("head");
  const panel = PANELS[ctx.step.panel];
  const heads = Array.from({ length: state.info.n_heads }, (_, i) => i);
  headSel.replaceChildren(
    ...heads.map((i) => {
      const known = ctx.headLabel(i);
      return h("option", { value: String(i), text: known ? `${i} · ${t(`pat_${known.label}`)}` : String(i) });
    }),
  );
  headSel.value = String(ctx.head);
  headSel.disabled = !panel.hasHeads || ctx.view !== "head";
  for (const button of document.querySelectorAll("#views button")) {
    const view = button.dataset.view;
    const allowed = view === "head" || (ctx.step.block && panel.hasHeads && (view === "heads" || panel.hasLayers));
    button.disabled = !allowed;
    button.classList.toggle("active", view === ctx.view);
    button.setAttribute("aria-pressed", view === ctx.view ? "true" : "false");
  }
}

function renderModelInfo(ctx) {
  const select = $("model");
  select.replaceChildren(...state.models.map((m) => h("option", { value: m.name, text: m.name })));
  select.value = state.model;
  const info = state.info;
  const cfg = info.config;
  const arch = { decoder: "arch_decoder", encoder: "arch_encoder", "encoder-decoder": "arch_encdec" }[info.architecture];
  const kv = info.n_kv_heads === info.n_heads ? t("kv_mha") : info.n_kv_heads === 1 ? t("kv_mqa") : t("kv_gqa", { kv: info.n_kv_heads });
  const lines = [
    h("p", { class: "arch", text: t(arch) }),
    h("p", {
      class: "config-line",
      text: t("config_line", {
        layers: info.n_layers,
        d_model: cfg.d_model,
        heads: info.n_heads,
        d_head: info.d_head,
        kv,
        norm: cfg.norm === "rmsnorm" ? "RMSNorm" : "LayerNorm",
        placement: cfg.norm_placement === "post" ? t("post_norm") : t("pre_norm"),
        act: cfg.activation,
        pos: cfg.pos_encoding,
      }),
    }),
  ];
  if (info.description) lines.push(h("p", { class: "description", text: info.description }));
  const languages = info.meta && info.meta.language;
  if (Array.isArray(languages) && !languages.includes("zh")) lines.push(h("p", { class: "warning english-only", text: t("english_only") }));
  $("model-info").replaceChildren(...lines);
  $("target-row").hidden = info.architecture !== "encoder-decoder";
  renderModelExamples(info);
  renderSnapshots(info);
}

/** Training snapshots listed in a checkpoint's meta, oldest first. */
function snapshotsOf(info) {
  const listed = info && info.meta && info.meta.snapshots;
  return Array.isArray(listed) ? listed.filter((x) => Number.isInteger(x.step)).sort((a, b) => a.step - b.step) : [];
}

function snapshotText(info, index) {
  const snaps = snapshotsOf(info);
  const fmt = (loss) => (typeof loss === "number" ? loss.toFixed(2) : "?");
  if (index < snaps.length) return t("snapshot_step", { step: snaps[index].step, loss: fmt(snaps[index].val_loss) });
  const training = (info.meta && info.meta.training) || {};
  return t("snapshot_final", { step: training.steps ?? "?", loss: fmt(info.meta && info.meta.val_loss) });
}

/** The training-progress slider: earlier weights of the same model (the last position is the final one). */
function renderSnapshots(info) {
  const snaps = snapshotsOf(info);
  $("snapshot-row").hidden = snaps.length === 0;
  if (!snaps.length) return;
  const slider = $("snapshot");
  const index = state.snapshot === null || state.snapshot === undefined ? snaps.length : snaps.findIndex((x) => x.step === state.snapshot);
  slider.max = String(snaps.length);
  slider.value = String(index < 0 ? snaps.length : index);
  $("snapshot-label").textContent = snapshotText(info, Number(slider.value));
}

/** A model trained on its own task (the translator) brings its own examples: source -> target. */
function renderModelExamples(info) {
  const examples = info.meta && info.meta.examples;
  const pairs = examples && typeof examples === "object" && !Array.isArray(examples) ? Object.entries(examples) : [];
  $("general-examples").hidden = pairs.length > 0;
  const buttons = pairs.map(([source, target]) => {
    const button = h("button", { type: "button", class: "example small", text: `${source} → ${target}` });
    button.addEventListener("click", () => {
      $("text").value = source;
      $("target").value = String(target);
      go({ text: source, target: String(target) });
    });
    return button;
  });
  $("model-examples").replaceChildren(...buttons);
}

function renderTokens() {
  const parts = [h("div", { class: "token-row" }, h("span", { class: "token-label", text: t("tokens") }), tokenChips(state.tokens))];
  if (state.targetTokens) {
    parts.push(h("div", { class: "token-row" }, h("span", { class: "token-label", text: t("target_tokens") }), tokenChips(state.targetTokens)));
  }
  $("tokens").replaceChildren(...parts);
}

function render(ctx, panel, data) {
  setLang(state.lang);
  document.body.classList.toggle("present", state.present);
  applyStaticText();
  renderModelInfo(ctx);
  renderTokens();
  renderStageList(ctx);
  renderSelectors(ctx);
  const text = stepText(ctx.step.key, ctx.vars);
  const stack = ctx.step.stack ? `${t(ctx.step.stack)} · ` : "";
  const layer = ctx.layer !== null ? `${t("layer")} ${ctx.layer} · ` : "";
  $("stage-kicker").textContent = `${stack}${layer}${t("step_of", { n: state.index + 1, total: state.plan.order.length })}`;
  $("stage-title").textContent = text.title;
  $("formula").textContent = text.formula;
  $("explain").textContent = text.explain;
  $("prev").disabled = state.index === 0;
  $("next").disabled = state.index === state.plan.order.length - 1;
  document.title = `${text.title} · ${t("app_title")}`;
  const stage = $("stage");
  stage.dataset.stage = ctx.step.id;
  stage.dataset.layer = ctx.layer === null ? "" : String(ctx.layer);
  stage.dataset.view = ctx.view;
  board.begin(`${ctx.step.panel}:${ctx.view}`);
  panel.draw(board, data, ctx);
  board.end();
  stage.dataset.rendered = String(generation);
}

// ------------------------------------------------------------------ events

function bindEvents() {
  $("run").addEventListener("click", () => go({ text: $("text").value, target: $("target").value }));
  $("input-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (document.activeElement && document.activeElement.blur) document.activeElement.blur(); // ← → step right away
    go({ text: $("text").value, target: $("target").value });
  });
  $("model").addEventListener("change", (event) => go({ model: event.target.value }));
  $("prev").addEventListener("click", () => stepBy(-1));
  $("next").addEventListener("click", () => stepBy(1));
  $("layer").addEventListener("change", (event) => go({ layer: Number(event.target.value) }));
  $("head").addEventListener("change", (event) => go({ head: Number(event.target.value) }));
  for (const button of document.querySelectorAll("#views button")) {
    button.addEventListener("click", () => go({ view: button.dataset.view }));
  }
  for (const button of document.querySelectorAll(".example")) {
    button.addEventListener("click", () => {
      $("text").value = button.dataset.text;
      go({ text: button.dataset.text });
    });
  }
  $("fill-target").addEventListener("click", async () => {
    // the decoder's own greedy output (top-1) becomes its input, so every target position is filled
    const text = $("text").value;
    const target = $("target").value;
    try {
      const answer = await api.predict({ model: state.model, text, target_text: target, top_k: 1, temperature: 1, seed: 0, max_new_tokens: 24 });
      const more = answer.generated && answer.generated.text ? answer.generated.text : "";
      $("target").value = target + more;
      go({ text, target: target + more });
    } catch (error) {
      showError(error);
    }
  });
  $("snapshot").addEventListener("input", (event) => {
    $("snapshot-label").textContent = snapshotText(state.info, Number(event.target.value));
  });
  $("snapshot").addEventListener("change", (event) => {
    const snaps = snapshotsOf(state.info);
    const index = Number(event.target.value);
    go({ snapshot: index < snaps.length ? snaps[index].step : null });
  });
  $("lang").addEventListener("click", () => go({ lang: state.lang === "en" ? "zh" : "en" }));
  $("present").addEventListener("click", () => go({ present: !state.present }));
  $("copy-link").addEventListener("click", async () => {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      showNote(t("link_copied"));
    } catch (error) {
      const field = h("input", { class: "link-field", value: url, readonly: true });
      $("message").replaceChildren(h("span", { class: "message-text", text: t("link_ready") }), field);
      $("message").hidden = false;
      field.select();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const tag = (event.target && event.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const keys = {
      ArrowRight: () => stepBy(1),
      PageDown: () => stepBy(1),
      ArrowLeft: () => stepBy(-1),
      PageUp: () => stepBy(-1),
      Home: () => go({ index: 0 }),
      End: () => go({ index: state.plan.order.length - 1 }),
      l: () => layerBy(1),
      L: () => layerBy(-1),
      h: () => headBy(1),
      H: () => headBy(-1),
      p: () => go({ present: !state.present }),
      Escape: () => state.present && go({ present: false }),
    };
    if (event.key === " " && state.present) keys[" "] = () => stepBy(event.shiftKey ? -1 : 1);
    const action = keys[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  });
}

// ------------------------------------------------------------------ start

async function start() {
  board = new Board($("panel"));
  const url = readURL();
  const wanted = url.lang || ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en");
  state.lang = wanted === "zh" ? "zh" : "en";
  setLang(state.lang);
  applyStaticText();
  bindEvents();
  try {
    state.models = await api.models();
  } catch (error) {
    showError(error);
    return;
  }
  if (!state.models.length) {
    showError(new ApiError(0, "no_models", t("err_no_models")));
    return;
  }
  const names = state.models.map((m) => m.name);
  const model = names.includes(url.model) ? url.model : (state.models.find((m) => m.default) || state.models[0]).name;
  const text = url.text ?? $("text").value;
  $("text").value = text;
  $("target").value = url.target;
  await go({
    model,
    text,
    target: url.target,
    stage: url.stage,
    layer: url.layer ?? 0,
    head: url.head ?? 0,
    view: url.view,
    present: url.present,
    compare: url.compare,
    snapshot: url.snapshot,
  });
  document.body.dataset.ready = "1";
}

start();
