// The notebook widget (transformer_explorer/widget.py): the Python API's results drawn by the page's own panel
// code, offline. The widget's HTML inlines this module's bundle (static_site/bundle.py), Plotly and the texts;
// window.TE_WIDGET holds the views (each an API answer, as the server sent it) and window.TE_SITE hands the text
// files to i18n.js as a recorded site does, so nothing is fetched. ←/→ (or the buttons) step through the views.

import { decodeStages, Tensor } from "./shared/api.js";
import { loadTexts } from "./shared/i18n.js";
import { h, tokenChips } from "./shared/dom.js";
import { plotlyReady } from "./shared/plotly_loader.js";
import { tokenLabels } from "./shared/plot.js";
import { describedStage } from "./shared/stage_names.js";
import { Board } from "./board.js";
import { drawGrid, drawTokenMatrix } from "./panels/common.js";
import logits from "./panels/logits.js";
import { headTitle } from "./panels/attention.js";
import { headLabel, sentenceLang } from "./probes.js";

const WIDGET = window.TE_WIDGET;

/** What a stage panel's helpers read from their context, for one answer (no page state behind it). */
function stageContext(texts, view, tokens, name) {
  const info = view.info || {};
  return { t: texts.t, texts, tokens, sourceTokens: tokens, fname: `${view.answer.model}_${name}`.replace(/[^\w.-]/g, "_"),
    names: { main: name }, plan: { dims: {} }, info, cfg: info.config || {}, headLabel: () => null };
}

/** The heads of a [head, q_pos, k_pos] tensor side by side (the page's heads view); `masked`: its hidden cells.
 *  `layer`: its layer, whose heads the model's measured labels name (the page's titles: "Head 6 · induction 0.84"). */
function drawHeads(board, ctx, tensor, masked, title, layer = null) {
  const n = tensor.size("head");
  const cells = Array.from({ length: n }, (_, i) => ({ z: tensor.matrix("q_pos", "k_pos", { head: i }),
    masked: masked ? masked.matrix("q_pos", "k_pos", { head: i }) : null }));
  const labels = tokenLabels(ctx.tokens);
  const probs = tensor.name.endsWith("pattern");
  const lang = sentenceLang(ctx.tokens.map((token) => token.text).join(""));
  ctx.headLabel = (head) => (layer === null ? null : headLabel(ctx.info, lang, { stack: "", layer, head }));
  const plot = board.card("heads", { title, badges: [], filename: ctx.fname });
  const cols = Math.min(n, 4);
  drawGrid(plot, ctx, cells, { rows: Math.ceil(n / cols), cols, x: labels, y: labels, signed: !probs,
    zmin: probs ? 0 : undefined, zmax: probs ? 1 : undefined, titles: cells.map((_, i) => headTitle(ctx, i)) });
}

/** One traced stage: its heads, a [token × dim] heatmap (other dims at 0), or the tokens themselves. */
function drawStage(board, texts, view, name) {
  const { answer } = view;
  const tensor = decodeStages(answer)[name];
  const ctx = stageContext(texts, view, answer.tokens, name);
  const layer = describedStage(ctx.info, name)?.layer ?? null; // the server's description of the stage, never its name parsed
  if (tensor.has("head") && tensor.has("q_pos") && tensor.has("k_pos")) return drawHeads(board, ctx, tensor, null, name, layer);
  if (tensor.dims.length < 2) return board.block("tokens", h("div", {}, h("h3", { text: name }), tokenChips(answer.tokens)));
  const fixed = Object.fromEntries(tensor.dims.slice(1, -1).map((dim) => [dim, 0]));
  const at = Object.keys(fixed).map((dim) => `${dim} 0`).join(", ");
  return drawTokenMatrix(board, "stage", ctx, tensor, { title: at ? `${name} (${at})` : name, label: name, fixed });
}

/** A lab experiment's answer, drawn by its lab panel (static/js/lab/panels/<name>.js). */
async function drawLab(board, view, labTexts) {
  const panel = (await import(`./lab/panels/${view.kind}.js`)).default;
  const request = view.request || {};
  const s = { model: view.answer.model || request.model || "", text: request.text || "", lang: WIDGET.lang,
    texts: { [WIDGET.lang]: labTexts }, info: view.info || {}, models: [] };
  // the panel's own fields, as the page would hold them for this request: its mapping when the names differ
  // (fromRequest), else its fields' initial values overwritten by the request's fields of the same name
  const initial = Object.fromEntries(Object.entries(panel.fields || {}).map(([key, spec]) => [key, spec.initial]));
  const v = panel.fromRequest ? { ...initial, ...panel.fromRequest(request, view.answer) } : { ...initial, ...request };
  panel.draw(board, view.answer, { s, info: s.info, v, ask: null, say: labTexts.t, models: [] });
}

/** Every view of the widget: a trace's stages one by one, or one view of another result. */
function viewsOf(item) {
  if (item.kind === "trace") return Object.keys(item.answer.stages).map((stage) => ({ ...item, stage }));
  return [item];
}

async function drawView(board, view, texts) {
  const { answer } = view;
  if (view.kind === "trace") return drawStage(board, texts.explorer, view, view.stage);
  if (view.kind === "attention") {
    const ctx = stageContext(texts.explorer, view, answer.query_tokens, `attention_L${answer.layer}`);
    const title = `${texts.explorer.t("view_heads")} · L${answer.layer}`;
    return drawHeads(board, ctx, new Tensor(answer.pattern), new Tensor(answer.masked), title, answer.stack || answer.cross ? null : answer.layer);
  }
  if (view.kind === "predict" || view.kind === "generate") {
    const ctx = stageContext(texts.explorer, view, answer.tokens, "logits");
    return logits.draw(board, { prediction: answer }, ctx);
  }
  if (view.kind === "tokenize") return board.block("tokens", tokenChips(answer.tokens));
  return drawLab(board, view, texts.lab);
}

async function start() {
  const root = document.getElementById("widget");
  const [explorer, lab] = await Promise.all([loadTexts(WIDGET.lang, WIDGET.lang), loadTexts(`lab.${WIDGET.lang}`, WIDGET.lang)]);
  const texts = { explorer, lab };
  await plotlyReady();
  const views = WIDGET.items.flatMap(viewsOf);
  const label = h("span", { class: "widget-where" });
  const board = new Board(h("div", { class: "panel" }));
  let index = 0;
  const show = async (to) => {
    index = Math.max(0, Math.min(views.length - 1, to));
    const view = views[index];
    label.textContent = `${index + 1} / ${views.length} · ${view.stage || view.kind}`;
    board.begin(`${view.kind}:${view.stage || ""}`, explorer.t);
    try {
      await drawView(board, view, texts);
    } catch (error) {
      board.block("error", h("p", { class: "widget-error", text: String(error && error.message ? error.message : error) }));
    }
    board.end();
    root.dataset.view = String(index);
  };
  const step = (by) => () => show(index + by);
  const nav = h("div", { class: "widget-nav" }, h("button", { type: "button", text: "←", onclick: step(-1) }), label,
    h("button", { type: "button", text: "→", onclick: step(1) }));
  root.replaceChildren(...(views.length > 1 ? [nav] : []), board.root);
  document.addEventListener("keydown", (event) => {
    if (event.key === "ArrowLeft") show(index - 1);
    if (event.key === "ArrowRight") show(index + 1);
  });
  await show(0);
  root.dataset.ready = "true";
}

start().catch((error) => {
  document.getElementById("widget").textContent = String(error && error.stack ? error.stack : error);
});
