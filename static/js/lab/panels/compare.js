// Compare with a variant: a second model beside the first on the same sentence, matched stages side
// by side: another registered model, or the same config with one setting changed (POST /api/trace).

import { api, decodeStages } from "../../api.js";
import { draw, h, heatmap, tokenLabels } from "../../plot.js";
import { selfPrefix } from "../api.js";
import { SETTINGS } from "../state.js";
import { fmt, selectField } from "../ui.js";

const INLINE_FIELDS = ["architecture", "d_model", "n_layers", "n_decoder_layers", "n_heads", "n_kv_heads", "d_mlp", "pos_encoding", "norm", "norm_placement", "activation", "bias", "sliding_window"];
const CHOICES = {
  n_heads: ["1", "2", "4", "8", "16"],
  d_head: ["4", "8", "16", "32", "64", "128"],
  pos_encoding: ["sinusoidal", "learned", "rope", "alibi", "none"],
  norm_placement: ["pre", "post"],
  activation: ["relu", "gelu", "gelu_tanh", "swiglu"],
  sliding_window: ["none", "1", "2", "3", "4", "8"],
};

/** The model's shape as a from-scratch config (random weights, seed 0). */
export function inlineOf(info) {
  const cfg = Object.fromEntries(INLINE_FIELDS.map((k) => [k, info.config[k]]).filter(([, v]) => v !== undefined));
  return { ...cfg, seed: 0 };
}

/** The same config with one setting changed. */
export function changedConfig(base, setting, value) {
  const out = { ...base };
  if (setting === "n_heads" || setting === "d_head") {
    out.n_heads = setting === "n_heads" ? Number(value) : Math.max(1, Math.round(base.d_model / Number(value)));
    out.n_kv_heads = null;
  } else if (setting === "sliding_window") out.sliding_window = value === "none" ? null : Number(value);
  else out[setting] = value;
  return out;
}

async function side(choice, s, label) {
  const info = choice.model ? await api.model(choice.model) : null;
  const arch = info ? info.architecture : choice.config.architecture;
  const layers = info ? info.n_layers : choice.config.n_layers;
  const layer = Math.min(s.layer < 0 ? layers - 1 : s.layer, layers - 1);
  const prefix = info ? selfPrefix(info) : arch === "encoder-decoder" ? "encoder." : "";
  const stage = `${prefix}blocks.${layer}.attn.hook_pattern`;
  const answer = await api.trace({ ...choice, text: s.text, stages: [stage], top_k: 5 });
  return { label, layer, stage, answer };
}

export default {
  id: "compare",
  async load(s, info) {
    if (!s.variant) return null;
    if (s.variant.startsWith("model:")) {
      const other = s.variant.slice(6);
      return Promise.all([side({ model: s.model }, s, s.model), side({ model: other }, s, other)]);
    }
    const base = inlineOf(info);
    const variant = changedConfig(base, s.setting, s.value);
    return Promise.all([side({ config: base }, s, `${s.model} (random)`), side({ config: variant }, s, `${s.setting} = ${s.value}`)]);
  },

  controls(s, say, info, models) {
    const options = [["", say("cmp_none")], ["set", say("cmp_setting")], ...models.filter((m) => m.name !== s.model).map((m) => [`model:${m.name}`, say("cmp_model", { name: m.name })])];
    const out = [selectField("variant", options, s.variant, say("cmp_variant"))];
    if (s.variant === "set") {
      out.push(selectField("setting", SETTINGS.map((k) => [k, k]), s.setting, say("cmp_which")));
      const values = CHOICES[s.setting] || [];
      out.push(selectField("value", values.map((v) => [v, v]), values.includes(s.value) ? s.value : values[0], say("cmp_value")));
    }
    return out;
  },

  draw(board, data, c) {
    const { say, s } = c;
    if (!data) {
      board.block("cmp-none", h("p", { class: "lab-note", text: say("cmp_intro") }));
      return;
    }
    for (const [i, run] of data.entries()) {
      const pattern = decodeStages(run.answer)[run.stage];
      const head = Math.min(s.head, pattern.size("head") - 1);
      const labels = tokenLabels(run.answer.tokens);
      const loss = run.answer.loss;
      const top = (run.answer.top_tokens || []).slice(0, 3).map((r) => `${r.text} ${fmt(r.prob, 2)}`).join(" · ");
      draw(board.card(`cmp-${i}`, {
        title: say("cmp_side", { label: run.label, layer: run.layer, head, n_heads: pattern.size("head") }),
        className: "half",
        note: say("cmp_side_note", { loss: loss === null || loss === undefined ? "–" : fmt(loss, 3), top: top || "–", n_tokens: labels.length }),
      }),
      [heatmap({ z: pattern.matrix("q_pos", "k_pos", { head }), x: labels, y: labels, signed: false, zmin: 0, zmax: 1, annotate: false, valueLabel: say("weight") })],
      { height: 360, xaxis: { type: "category", tickfont: { size: 10 } }, yaxis: { type: "category", autorange: "reversed", tickfont: { size: 10 } } }, `compare_${i}`);
    }
    board.block("cmp-note", h("p", { class: "lab-note", text: s.variant === "set" ? say("cmp_random_note") : say("cmp_models_note") }));
  },
};
