// Rendering: draws the committed state (and the context go() built for it) into the page.
// Nothing here changes the state or binds navigation: clicks are handled in events.js.

import { Board } from "./board.js";
import { FN_NAMES, GLU_NAMES } from "./stage_text.js";
import { snapshotsOf } from "./context.js";
import { showNote } from "./shared/messages.js";
import { markRecorded } from "./shared/site.js";
import { $, h, tokenChips } from "./shared/dom.js";
import { state } from "./state.js";
import { labPanel, labURL } from "./lessons.js";
import { ownKey } from "./stages.js";
import { exampleOffer, keptPoints, renderLesson, renderSheet } from "./teach.js";
import { drawIntervention } from "./intervene.js";
import { englishNote, exampleSentences, hasChatTemplate, modelOptions } from "./shared/model_menu.js";
import { loadingGroup, watchLoading } from "./shared/loading_models.js";
import { shortLabel } from "./probes.js";
import { drawLossCurve } from "./progress.js";
import { drawMask } from "./questions.js";

const board = new Board($("panel")); // chart cards kept between renders (Plotly.react on the same div)

/** Put a patch's sentence / decoder input into the input fields. */
export function showInputs({ text, target }) {
  if (text !== undefined) $("text").value = text;
  if (target !== undefined) $("target").value = String(target);
}

/** What a recorded site cannot answer: a new sentence, another model or training step, the decoder's own words. */
const SERVER_CONTROLS = "#text, #run, #model, #target, #fill-target, #chat, .example, #snapshot";

/** The page's fixed words (data-i18n), its language attribute and the presentation button. */
export function renderStatic(texts, present, explainOpen = false) {
  const { t } = texts;
  document.documentElement.lang = texts.htmlLang;
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
  $("present").textContent = present ? t("exit_present") : t("present");
  document.body.classList.toggle("explain-open", Boolean(explainOpen));
  placeSide(present && Boolean(explainOpen));
}

/**
 * Presentation mode with the explanation open (E): the chapter's text and the stage's explanation stand
 * in a column beside the chart, so the chart keeps the screen's height (U1 of teaching review 3: above
 * it they squashed it to 150 px). Closed, they go back to their places above the stage.
 */
function placeSide(on) {
  const side = $("present-side");
  const lesson = $("lesson");
  const explain = document.querySelector(".explain-box");
  side.hidden = !on;
  if (on) {
    if (lesson.parentElement !== side) side.append(lesson, explain);
  } else if (lesson.parentElement === side) {
    $("message").after(lesson);
    document.querySelector("#stage .stage-head").after(explain);
  }
}

/** A sentence the model cannot use (the translator given "The animal…"): offer its own example. */
function renderOffer(t) {
  const offer = exampleOffer(state.info, state.text);
  const box = $("offer");
  box.hidden = !offer;
  if (!offer) return box.replaceChildren();
  return box.replaceChildren(
    h("span", { text: t("offer_example", { model: state.model }) }),
    h("button", { type: "button", class: "example small", "data-text": offer.text, "data-target": offer.target, text: `${offer.text} → ${offer.target}` }),
  );
}

function sectionTitle(section, ctx) {
  const { t } = ctx;
  const plan = state.plan;
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

/** The stepper in the sidebar; a button's data-stage is what a click goes to. */
function renderStageList(ctx) {
  const groups = state.plan.sections.map((section) =>
    h(
      "li",
      { class: `stage-group ${section.phase}` },
      h("div", { class: "group-title", text: sectionTitle(section, ctx) }),
      h(
        "ol",
        {},
        section.steps.map((step) => {
          const text = ctx.stageText(step.key);
          return h(
            "li",
            {},
            h("button", {
              type: "button",
              class: `stage-item${step.id === ctx.step.id ? " active" : ""}`,
              "data-stage": step.id,
              "aria-current": step.id === ctx.step.id ? "step" : undefined,
              text: text.short || text.title,
            }),
          );
        }),
      ),
    ),
  );
  $("stage-list").replaceChildren(...groups);
}

function renderSelectors(ctx) {
  const { t } = ctx;
  const layerSel = $("layer");
  const layers = ctx.step.block ? state.plan.layers[ctx.step.stack] : Object.values(state.plan.layers)[0] || [];
  layerSel.replaceChildren(...layers.map((l) => h("option", { value: String(l), text: String(l) })));
  layerSel.disabled = !ctx.step.block;
  layerSel.value = String(ctx.layer !== null ? ctx.layer : Math.min(state.layer, layers.length - 1));
  const headSel = $("head");
  const heads = Array.from({ length: state.info.n_heads }, (_, i) => i);
  headSel.replaceChildren(
    ...heads.map((i) => {
      const known = ctx.headLabel(i);
      return h("option", { value: String(i), "data-probe": known ? known.probe : undefined, text: known ? `${i} · ${shortLabel(t, known)}` : String(i) });
    }),
  );
  headSel.value = String(ctx.head);
  headSel.disabled = !ctx.panel.hasHeads || ctx.view === "layers"; // all heads: choosing one opens its map (events.js)
  for (const button of document.querySelectorAll("#views button")) {
    const view = button.dataset.view;
    const allowed = view === "head" || (ctx.step.block && ctx.panel.hasHeads && (view === "heads" || ctx.panel.hasLayers));
    button.disabled = !allowed;
    button.classList.toggle("active", view === ctx.view);
    button.setAttribute("aria-pressed", view === ctx.view ? "true" : "false");
  }
}

function renderModelInfo(ctx) {
  const { t } = ctx;
  const select = $("model");
  const refused = { list: state.refused, label: t("refused_group"), why: (r) => t("refused_why", { reason: r.reason }) };
  select.replaceChildren(...modelOptions(state.models, t("pe_family_group"), state.text, refused), ...loadingGroup(state.loading, t));
  select.value = state.model;
  if (state.loading.length) watchLoading(select, t);
  const info = state.info;
  const cfg = info.config;
  // Qwen3.5: some layers are gated DeltaNet, not attention (a config may make them all DeltaNet)
  const deltanet = (cfg.deltanet_layers ?? []).length;
  const hybrid = deltanet > 0;
  const decoder = !hybrid ? "arch_decoder" : deltanet < info.n_layers ? "arch_decoder_hybrid" : "arch_decoder_deltanet";
  const arch = { decoder, encoder: "arch_encoder", "encoder-decoder": "arch_encdec" }[info.architecture];
  const kv = info.n_kv_heads === info.n_heads ? t("kv_mha") : info.n_kv_heads === 1 ? t("kv_mqa") : t("kv_gqa", { kv: info.n_kv_heads });
  const lines = [
    h("p", { class: "arch", text: t(arch) }),
    h("p", {
      class: "config-line",
      text: t("config_line", {
        ...ctx.vars,
        kv_kind: kv,
        norm: `${cfg.norm === "rmsnorm" ? "RMSNorm" : "LayerNorm"}${cfg.qk_norm ? t("cfg_qk_norm") : ""}`,
        placement: cfg.norm_placement === "post" ? t("post_norm") : t("pre_norm"),
        activation: `${GLU_NAMES[cfg.activation] ?? FN_NAMES[cfg.activation] ?? cfg.activation}${ // SwiGLU, not swiglu
          cfg.n_experts ? t("cfg_experts", { n_experts: cfg.n_experts, n_experts_used: cfg.n_experts_used }) : ""}${
          cfg.shared_expert_d_mlp ? t("cfg_shared_expert", { shared_d_mlp: cfg.shared_expert_d_mlp }) : ""}`,
        pos: `${t(`pos_name_${cfg.pos_encoding}`)}${cfg.rope_freq_factors ? t("cfg_rope_scaled") : ""}${
          cfg.nope_layers ? t("cfg_nope", { nope_layers: ctx.vars.nope_layers }) : ""}`,
      }),
    }),
  ];
  if (hybrid) lines.push(h("p", { class: "config-line hybrid-line", text: hybridLine(t, deltanet, info.n_layers - deltanet, ctx.vars) }));
  // the API's description is English; a model's meta may carry its Chinese one
  const description = state.lang === "zh" && info.meta && info.meta.description_zh ? info.meta.description_zh : info.description;
  if (description) lines.push(h("p", { class: "description", text: description }));
  const english = englishNote(info);
  if (english) lines.push(h("p", { class: "warning english-only", text: t(english) }));
  $("model-info").replaceChildren(...lines);
  $("target-row").hidden = info.architecture !== "encoder-decoder";
  $("chat-row").hidden = !hasChatTemplate(info);
  $("chat").checked = Boolean(state.chat);
  renderModelExamples(info);
  renderSnapshots(ctx);
}

/**
 * Qwen3.5: which layers are gated DeltaNet and which attention, and what each keeps per sequence; each part
 * singular or plural by its count of layers ("layer 3 is attention", "layers 0, 1, 2 are gated DeltaNet").
 */
function hybridLine(t, deltanet, attention, vars) {
  const form = (n) => (n === 0 ? "none" : n === 1 ? "one" : "other"); // the DeltaNet part is never "none"
  return t("hybrid_line", {
    deltanet_part: t(`hybrid_deltanet_${form(deltanet)}`, vars),
    attention_part: t(`hybrid_attention_${form(attention)}`, vars),
  });
}

/** The slider's label for position `index` (the last position: the final weights). */
export function snapshotText(t, info, index) {
  const snaps = snapshotsOf(info);
  const fmt = (loss) => (typeof loss === "number" ? loss.toFixed(2) : "?");
  if (index < snaps.length) return t("snapshot_step", { step: snaps[index].step, loss: fmt(snaps[index].val_loss) });
  const training = (info.meta && info.meta.training) || {};
  return t("snapshot_final", { step: training.steps ?? "?", loss: fmt(info.meta && info.meta.val_loss) });
}

/**
 * The training-progress slider: earlier weights of the same model (the last position is the final
 * one), and under it the loss curve (progress.js) with a marker at the step the slider selects.
 */
function renderSnapshots(ctx) {
  const info = state.info;
  const snaps = snapshotsOf(info);
  $("snapshot-row").hidden = snaps.length === 0;
  let position = 0; // without snapshots: the final weights
  if (snaps.length) {
    const slider = $("snapshot");
    const index = state.snapshot === null || state.snapshot === undefined ? snaps.length : snaps.findIndex((x) => x.step === state.snapshot);
    slider.max = String(snaps.length);
    slider.value = String(state.preview ?? (index < 0 ? snaps.length : index));
    position = Number(slider.value);
    $("snapshot-label").textContent = snapshotText(ctx.t, info, position);
  }
  drawLossCurve($("loss-curve"), ctx.t, info, position, state.present);
}

/** A model trained on its own task (the translator) brings its own examples: source -> target. */
function renderModelExamples(info) {
  const examples = info.meta && info.meta.examples;
  const pairs = examples && typeof examples === "object" && !Array.isArray(examples) ? Object.entries(examples) : [];
  $("general-examples").hidden = pairs.length > 0;
  const buttons = pairs.map(([source, target]) =>
    h("button", { type: "button", class: "example small", "data-text": source, "data-target": String(target), text: `${source} → ${target}` }),
  );
  // a model's own lesson-worthy sentences (smollm2: "The capital of France is", a sentence typed twice)
  for (const text of exampleSentences(info, state.chat)) buttons.push(h("button", { type: "button", class: "example small model-example", "data-text": text, title: text, text }));
  $("model-examples").replaceChildren(...buttons);
}

function renderTokens(t) {
  const parts = [h("div", { class: "token-row" }, h("span", { class: "token-label", text: t("tokens") }), tokenChips(state.tokens))];
  if (state.targetTokens) {
    parts.push(h("div", { class: "token-row" }, h("span", { class: "token-label", text: t("target_tokens") }), tokenChips(state.targetTokens)));
  }
  $("tokens").replaceChildren(...parts);
}

/** Draw the committed state: the shell from `state`, the panel from `ctx` and its loaded `data`. */
export function render(ctx, data, ivData = null, archData = null) {
  const { t } = ctx;
  document.body.classList.toggle("present", state.present);
  renderStatic(ctx.texts, state.present, state.explainOpen);
  renderModelInfo(ctx);
  renderTokens(t);
  renderOffer(t);
  renderLesson(t);
  renderSheet(t, archData);
  renderStageList(ctx);
  renderSelectors(ctx);
  const text = ctx.text;
  const stack = ctx.step.stack ? `${t(ctx.step.stack)} · ` : "";
  const layer = ctx.layer !== null ? `${t("layer")} ${ctx.layer} · ` : "";
  $("stage-kicker").textContent = `${stack}${layer}${t("step_of", { n: state.index + 1, total: state.plan.order.length })}`;
  $("stage-title").textContent = text.title;
  const lab = labPanel(ownKey(ctx.step), null);
  $("lab-link").hidden = !lab;
  if (lab) Object.assign($("lab-link"), { href: labURL(lab, state), textContent: t("lab_link", { panel: t(`lab_panel_${lab}`) }) });
  $("formula").textContent = text.formula;
  $("explain").textContent = text.explain;
  $("prev").disabled = state.index === 0;
  $("next").disabled = state.index === state.plan.order.length - 1;
  document.title = `${text.title} · ${t("app_title")}`;
  const stage = $("stage");
  stage.dataset.stage = ctx.step.id;
  stage.dataset.layer = ctx.layer === null ? "" : String(ctx.layer);
  stage.dataset.view = ctx.view;
  board.begin(`${ctx.step.panel}:${ctx.view}`, t);
  drawIntervention(board, ivData, ctx); // the toggles (and, with one on, both runs) first, then the stage's own charts
  ctx.panel.draw(board, data, ctx);
  const kept = keptPoints(); // a projector: the chapter's own points, under its chart
  if (kept) board.block("lesson-kept", kept, "kept-card");
  board.end();
  stage.dataset.rendered = String(state.generation);
  if (state.note) showNote(t(state.note.key), state.note.link);
  markRecorded(t, SERVER_CONTROLS); // a recorded site: what needs the server is disabled, saying why
  drawMask(); // a question being predicted keeps the chart masked (questions.js)
}

// a question answered: the lesson bar shows the reveal, and the chart its numbers again (questions.js)
document.addEventListener("question-answered", () => {
  renderLesson(state.texts[state.lang].t);
  drawMask();
});
