// Compare with a variant: a second model beside the first on the same sentence, matched stages side
// by side: another registered model, or the same config with one setting changed (POST /api/trace).
// Any stage both record can be chosen; equal shapes share one colour scale, different ones say why.

import { api, decodeStages } from "../../shared/api.js";
import { draw, heatmap, indexLabels, tokenLabels } from "../../shared/plot.js";
import { h } from "../../shared/dom.js";
import { int, str } from "../state.js";
import { fmt, range, selectField } from "../ui.js";
import { changedConfig, commonStages, dimLabel, hasHead, inlineOf, isPos, maxDifference, shapeDiff, sharedScale, sideInfo, sliceOf, stageLabel } from "../compare_stages.js";

/** The settings a variant may change. */
const SETTINGS = ["n_heads", "d_head", "pos_encoding", "norm_placement", "activation", "sliding_window"];

/** A setting's values to choose from (pos_encoding: the server's kinds, GET /api/positional-encoding/kinds). */
const CHOICES = {
  n_heads: ["1", "2", "4", "8", "16"],
  d_head: ["4", "8", "16", "32", "64", "128"],
  norm_placement: ["pre", "post"],
  activation: ["relu", "gelu", "gelu_tanh", "swiglu"],
  sliding_window: ["none", "1", "2", "3", "4", "8"],
};

/** A setting's value in a learner's words (the value itself stays in the URL and the config). */
function valueLabel(setting, value, say) {
  if (setting === "pos_encoding") return say(`compare_pe_${value}`);
  if (setting === "activation") return say(`compare_act_${value}`);
  if (setting === "norm_placement") return say(`compare_value_${value}`);
  if (setting === "sliding_window" && value === "none") return say("compare_value_none");
  return value;
}

/** A side's name: a model's own name, or (one setting changed) what that side is, in the page's language. */
function sideLabel(label, say) {
  if (typeof label === "string") return label;
  if (label.random) return say("compare_side_random", { model: label.random });
  return say("compare_side_changed", { setting: say(`compare_setting_${label.setting}`), value: valueLabel(label.setting, label.value, say) });
}

/** The stage shown when none is chosen (or the chosen one is not common): the last self-attention pattern
 *  both sides have. */
function defaultStage(infos, common) {
  const layer = Math.min(...infos.map((x) => x.nLayers)) - 1;
  const stack = infos[0].architecture === "encoder-decoder" ? "encoder" : null;
  const pattern = common.find((x) => x.hook === "pattern" && x.site === "attn" && x.layer === layer && (x.stack ?? null) === stack);
  return (pattern || common[0]).name;
}

async function trace(choice, s, stage, head) {
  const body = { ...choice, text: s.text, stages: [stage.name], top_k: 5 };
  return api.trace(hasHead(stage.dims) ? { ...body, heads: [head] } : body);
}

export default {
  fields: {
    variant: str("", "vs"), // "": none, "set": this shape with one setting changed, "model:<name>": another model
    setting: str("n_heads", "set"),
    value: str("1", "val"),
    stage: str("", "cst"), // a trace name both sides record ("": the attention pattern)
    head: int(0, "cmh"),
  },

  async load({ s, info, v }) {
    if (!v.variant) return null;
    const kinds = v.variant === "set" ? (await api.positionalKinds()).map((k) => k.name) : null;
    let sides;
    if (v.variant.startsWith("model:")) {
      const other = v.variant.slice(6);
      sides = [{ choice: { model: s.model }, label: s.model }, { choice: { model: other }, label: other }];
    } else {
      const base = inlineOf(info);
      sides = [{ choice: { config: base }, label: { random: s.model } },
        { choice: { config: changedConfig(base, v.setting, v.value) }, label: { setting: v.setting, value: v.value } }];
    }
    const infos = await Promise.all(sides.map((x) => sideInfo(x.choice)));
    const common = commonStages(infos[0], infos[1]);
    if (!common.length) return { sides, common, stage: null, kinds };
    const stage = common.find((x) => x.name === v.stage) || common.find((x) => x.name === defaultStage(infos, common));
    const heads = infos.map((x) => Math.min(v.head, x.nHeads - 1));
    const answers = await Promise.all(sides.map((x, i) => trace(x.choice, s, stage, heads[i])));
    return { kinds, common, stage, maxHeads: Math.max(...infos.map((x) => x.nHeads)), sides: sides.map((x, i) => ({ ...x, nHeads: infos[i].nHeads, head: heads[i], answer: answers[i] })) };
  },

  controls({ s, v, say, models }, loaded) {
    const options = [["", say("compare_none")], ["set", say("compare_setting")], ...models.filter((m) => m.name !== s.model).map((m) => [`model:${m.name}`, say("compare_model", { name: m.name })])];
    const out = [selectField("variant", options, v.variant, say("compare_variant"))];
    if (v.variant === "set") {
      out.push(selectField("setting", SETTINGS.map((k) => [k, say(`compare_setting_${k}`)]), v.setting, say("compare_which")));
      const values = v.setting === "pos_encoding" ? (loaded && loaded.kinds) || [v.value] : CHOICES[v.setting] || [];
      out.push(selectField("value", values.map((x) => [x, valueLabel(v.setting, x, say)]), values.includes(v.value) ? v.value : values[0], say("compare_value")));
    }
    const data = v.variant && loaded;
    if (data && data.stage) {
      out.push(selectField("stage", data.common.map((x) => [x.name, `${stageLabel(x, say)} (${x.dims.filter((d) => d !== "batch").map((d) => dimLabel(d, say)).join(" × ")})`]), data.stage.name, say("compare_stage")));
      if (hasHead(data.stage.dims)) out.push(selectField("head", range(data.maxHeads), Math.min(v.head, data.maxHeads - 1), say("compare_head"), "int"));
    }
    return out;
  },

  draw(board, data, ctx) {
    const { say, v } = ctx;
    if (!data || !data.stage) {
      board.block("cmp-none", h("p", { class: "lab-note", text: say(data ? "compare_no_common" : "compare_intro") }));
      return;
    }
    const name = data.stage.name;
    const slices = data.sides.map((run) => sliceOf(decodeStages(run.answer)[name]));
    const diff = shapeDiff(slices[0], slices[1], say);
    const scale = diff ? null : sharedScale(slices);
    for (const [i, run] of data.sides.entries()) {
      const slice = slices[i];
      const labels = tokenLabels(run.answer.tokens);
      const axis = (dim, n) => (isPos(dim) ? labels.slice(0, n) : indexLabels(n));
      const loss = run.answer.loss;
      const top = (run.answer.top_tokens || []).slice(0, 3).map((r) => `${r.text} ${fmt(r.prob, 2)}`).join(" · ");
      const label = sideLabel(run.label, say);
      const title = hasHead(data.stage.dims) ? say("compare_side", { label, head: run.head, n_heads: run.nHeads }) : label;
      const plot = board.card(`cmp-${i}`, {
        title,
        className: "half",
        note: say("compare_side_note", { loss: loss === null || loss === undefined ? "–" : fmt(loss, 3), top: top || "–", n_tokens: labels.length, shape: slice.shape.join(" × ") }),
      });
      const own = scale || sharedScale([slice]);
      if (slice.kind === "heatmap") {
        const [rows, cols] = slice.shape;
        draw(plot, [heatmap({ z: slice.z, x: axis(slice.colDim, cols), y: axis(slice.rowDim, rows), ...own, annotate: false, valueLabel: say("compare_value_label") })],
          { height: 360, xaxis: { type: "category", title: { text: dimLabel(slice.colDim, say) }, tickfont: { size: 10 }, automargin: true }, yaxis: { type: "category", title: { text: dimLabel(slice.rowDim, say) }, autorange: "reversed", tickfont: { size: 10 }, automargin: true } }, `compare_${i}`);
      } else {
        draw(plot, [{ type: "bar", x: axis(slice.colDim, slice.shape[0]), y: slice.y, marker: { color: "#4a90c8" }, hovertemplate: `%{x}<br>${say("compare_value_label")} = %{y:.4f}<extra></extra>` }],
          { height: 300, xaxis: { type: "category", title: { text: dimLabel(slice.colDim, say) }, automargin: true }, yaxis: { title: { text: stageLabel(data.stage, say) }, range: [Math.min(own.zmin, 0), own.zmax], automargin: true } }, `compare_${i}`);
      }
    }
    const shapeNote = diff ? say("compare_shapes_differ", { diff }) : say("compare_shapes_match", { shape: slices[0].shape.join(" × "), max: fmt(maxDifference(slices[0], slices[1]), 4) });
    const words = data.sides.map((run) => run.answer.tokens.map((t) => t.text).join("\u0000"));
    const tokensNote = words[0] !== words[1] && slices[0].dims.some(isPos) ? ` ${say("compare_tokens_differ")}` : "";
    board.block("cmp-shape", h("p", { class: "lab-note cmp-shape", text: shapeNote + tokensNote }));
    board.block("cmp-note", h("p", { class: "lab-note", text: v.variant === "set" ? say("compare_random_note") : say("compare_models_note") }));
  },
};
