// Change one thing and see why, in the explorer: a toggle beside the stage an intervention changes
// (POST /api/trace with `interventions`), the original and the intervened run side by side — the
// stage's chart, the next tokens and the loss of the sentence, drawn by the view the lab shares
// (shared/interventions_view.js). The intervention is state.iv (+ ivWindow, ivTemp), in the URL, changed
// only through go(). Every number shown comes from the API.

import { h } from "./shared/dom.js";
import { interventionsOf as buildInterventions, loadBothRuns } from "./shared/interventions.js";
import { drawBothRuns, runMatrix } from "./shared/interventions_view.js";
import { attentionStage, maskOf, sentenceStackName } from "./shared/stage_names.js";
import { ownKey } from "./stages.js";

export const WINDOWS = [1, 2, 3, 4, 6, 8, 16];
export const TEMPS = [0.25, 0.5, 2, 4];

/** Which toggles sit beside a stage (self-attention only: cross-attention keeps its source as trained). */
const AT = { scale: ["no_scale"], softmax: ["no_scale", "temperature"], mask: ["no_mask", "window"], z: ["ablate"], attn_out: ["ablate"], tokens: ["shuffle"], pos: ["shuffle"] };

export function togglesAt(step) {
  return step.cross ? [] : AT[step.key] || [];
}

/** The state's intervention, if the stage it is at offers it (go() drops it elsewhere). */
export function activeAt(s, step) {
  return s.iv && togglesAt(step).includes(s.iv) ? s.iv : null;
}

/** The request's `interventions` for context `ctx` (its iv on). */
export function interventionsOf(ctx) {
  const params = { window: ctx.ivWindow, temperature: ctx.ivTemp, layer: ctx.layer, head: ctx.head, tokens: ctx.sourceTokens,
    // an encoder-decoder's head is named by its stack too: only the stack on screen loses it
    stack: ctx.info.architecture === "encoder-decoder" ? (ctx.step.stack === "decoder" ? "decoder" : "encoder") : null };
  return ctx.iv ? buildInterventions([ctx.iv], params) : null;
}

/** The trace stage the comparison charts: this stage's own, or (tokens, positions) layer 0's pattern. */
function chartStage(ctx) {
  if (ctx.iv !== "shuffle") return ctx.names.main;
  return attentionStage(ctx.info, "pattern", 0, { stack: sentenceStackName(ctx.info) });
}

/** Both runs (original, intervened) of the chart's stage, with their next tokens and the loss. */
export function loadIntervention(ctx) {
  if (!ctx.iv) return null;
  const name = chartStage(ctx);
  return loadBothRuns(ctx.req, name, interventionsOf(ctx), maskOf(ctx.info, name));
}

/** The model-specific sentence of an explanation: which variant is true for this model and stage. */
function explainKey(kind, ctx) {
  const arch = ctx.info.architecture;
  if (kind === "no_mask") {
    if (arch === "encoder") return "iv_explain_no_mask.encoder";
    if (arch === "encoder-decoder" && ctx.step.stack === "encoder") return "iv_explain_no_mask.encdec_encoder";
    return ctx.cfg.sliding_window ? "iv_explain_no_mask.window" : "iv_explain_no_mask.decoder";
  }
  if (kind === "ablate" && arch === "encoder-decoder") return `iv_explain_ablate.encdec_${ctx.step.stack === "decoder" ? "decoder" : "encoder"}`;
  return `iv_explain_${kind}`;
}

/** The placeholders of a toggle's words; pos_kind: the sentence on this model's positional encoding (iv_pos_<kind>). */
function ivVars(ctx) {
  const pos = ctx.cfg.pos_encoding || "none";
  return { ...ctx.vars, layer: ctx.layer ?? 0, head: ctx.head, w: ctx.ivWindow, temp: ctx.ivTemp, pos_kind: ctx.t(`iv_pos_${pos}`) };
}

/** The label of a toggle (with its current W or T). */
export function ivLabel(t, kind, ctx) {
  return t(`interventions_what_${kind}`, ivVars(ctx));
}

function choice(cls, values, current, onchange) {
  return h(
    "select",
    { class: cls, onchange },
    values.map((v) => h("option", { value: String(v), text: String(v), selected: v === current ? true : undefined })),
  );
}

/** The toggles beside this stage, and what the one that is on does to this model. */
function toggles(ctx) {
  const { t } = ctx;
  const kinds = togglesAt(ctx.step);
  const on = ctx.iv;
  const items = kinds.map((kind) => {
    const box = h("input", {
      type: "checkbox",
      class: "iv-toggle",
      "data-iv": kind,
      checked: on === kind ? true : undefined,
      onchange: (e) => ctx.go({ iv: e.target.checked ? kind : null }),
    });
    const parts = [h("label", { class: "toggle" }, box, ` ${t(`iv_${kind}`, ivVars(ctx))}`)];
    if (kind === "window") parts.push(choice("iv-window", WINDOWS, ctx.ivWindow, (e) => ctx.go({ iv: "window", ivWindow: Number(e.target.value) })));
    if (kind === "temperature") parts.push(choice("iv-temp", TEMPS, ctx.ivTemp, (e) => ctx.go({ iv: "temperature", ivTemp: Number(e.target.value) })));
    return h("span", { class: "iv-item" }, parts);
  });
  const lines = [h("strong", { text: `${t("iv_title")} ` }), ...items];
  const explain = on ? t(explainKey(on, ctx), ivVars(ctx)) : t("iv_hint");
  return h("div", { class: "iv-bar", "data-on": on || "" }, h("div", { class: "iv-toggles" }, lines), h("p", { class: "iv-explain", text: explain }));
}

/** Toggles (always, where the stage has any) and, with one on, both runs side by side (shared/interventions_view.js). */
export function drawIntervention(board, data, ctx) {
  const { t } = ctx;
  if (ctx.step.cross && AT[ownKey(ctx.step)]) {
    board.block("iv-bar", h("p", { class: "iv-explain", text: t("iv_cross_note") }), "iv-card");
    return;
  }
  if (!togglesAt(ctx.step).length) return;
  board.block("iv-bar", toggles(ctx), "iv-card");
  if (!data) return;
  // an encoder-decoder's decoder stages are read on the target's tokens (the reversed tokens chart the encoder)
  const onDecoder = ctx.info.architecture === "encoder-decoder" && ctx.step.stack !== "encoder" && ctx.iv !== "shuffle";
  const runs = data.runs.map((run) => ({ answer: run.answer, ...runMatrix(run.tensor, onDecoder ? run.answer.target_tokens || [] : run.answer.tokens, ctx.head, run.hidden) }));
  const what = ivLabel(t, ctx.iv, ctx);
  const where = ctx.iv === "shuffle" ? t("iv_shuffle_chart", { head: ctx.head }) : `${ctx.text.title} · ${t("head")} ${ctx.head}`;
  drawBothRuns(board, { name: data.name, changes: data.changes, probs: data.probs, runs, what, where }, t, { separator: ctx.texts.separator, fname: ctx.fname });
}
