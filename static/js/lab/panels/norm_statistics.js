// LayerNorm against BatchNorm (and RMSNorm) on one batch of two sentences (the norm_statistics experiment).

import { draw, tokenLabels } from "../../shared/plot.js";
import { int, LAYERS, str } from "../state.js";
import { fmt, lineLayout, range, selectField, textField } from "../ui.js";

/** Category labels of one padded sentence: "1 · 0·the" … then "1 · pad 5" for its pad positions. */
function labels(sentence, row, width, padWord) {
  const own = tokenLabels(sentence.tokens).map((t) => `${row} · ${t}`);
  return [...own, ...Array.from({ length: width - own.length }, (_, i) => `${row} · ${padWord} ${own.length + i}`)];
}

export default {
  // other: sentence 2 of the batch; swap: what replaces it in the second batch
  fields: { layer: int(0, "nsl", LAYERS), other: str("Dogs bark at night."), swap: str("我爱北京天安门广场。") },

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, other: v.other, swap: v.swap, layer: v.layer }),

  controls({ v, say, info }) {
    return [
      selectField("layer", range(info.n_layers), v.layer, say("layer"), "int"),
      textField("other", v.other, say("norm_statistics_other")),
      textField("swap", v.swap, say("norm_statistics_swap")),
    ];
  },

  draw(board, data, c) {
    const { say } = c;
    const pad = say("norm_statistics_pad");
    const x = data.sentences.flatMap((sen, i) => labels(sen, i + 1, data.width, pad));
    const of = (key) => data.sentences.flatMap((sen) => sen[key]);
    const maxOf = (xs) => Math.max(...xs);
    const n1 = data.sentences[0].tokens.length;
    const vars = {
      model: data.model, layer: data.layer, d_model: data.d_model, width: data.width, pads: data.pad_positions, real: data.real_tokens,
      n1, n2: data.sentences[1].tokens.length, own: say(data.norm === "layernorm" ? "norm_statistics_own_ln" : "norm_statistics_own_rms"),
      diff: data.model_scale_diff.toExponential(1),
      input: say(data.norm_placement === "pre" ? "norm_statistics_input_pre" : "norm_statistics_input_post"),
      ln: maxOf(data.swap_layer_norm).toExponential(1), rms: maxOf(data.swap_rms_norm).toExponential(1), bn: fmt(maxOf(data.swap_batch_norm), 3),
      sigma_lo: fmt(Math.min(...data.bn_sigma), 3), sigma_hi: fmt(maxOf(data.bn_sigma), 3),
    };
    const nulls = (xs) => xs.map((v) => (v === null ? null : v));
    draw(board.card("ns-ln", { title: say("norm_statistics_ln_title", vars), className: "half", note: say("norm_statistics_ln_note", vars) }), [
      { type: "bar", x, y: nulls(of("ln_sigma")), name: say("norm_statistics_ln_sigma") },
      { type: "bar", x, y: nulls(of("rms")), name: say("norm_statistics_rms") },
      { type: "scatter", mode: "markers", x, y: nulls(of("ln_mean")), name: say("norm_statistics_ln_mean"), marker: { size: 9, symbol: "diamond" } },
    ], { ...lineLayout("", say("norm_statistics_value"), { xaxis: { type: "category", tickangle: -50 } }), barmode: "group", height: 360 }, "norm_statistics_tokens");
    const features = data.bn_mean.map((_, i) => i);
    draw(board.card("ns-bn", { title: say("norm_statistics_bn_title", vars), className: "half", note: say("norm_statistics_bn_note", vars) }), [
      { x: features, y: data.bn_sigma, mode: "lines", name: say("norm_statistics_bn_sigma") },
      { x: features, y: data.bn_mean, mode: "lines", name: say("norm_statistics_bn_mean") },
    ], { ...lineLayout(say("norm_statistics_feature"), say("norm_statistics_value")), height: 360 }, "norm_statistics_features");
    const first = tokenLabels(data.sentences[0].tokens);
    draw(board.card("ns-swap", { title: say("norm_statistics_swap_title", vars), note: say("norm_statistics_swap_note", vars) }), [
      { type: "bar", x: first, y: data.swap_batch_norm, name: say("norm_statistics_bn") },
      { type: "bar", x: first, y: data.swap_layer_norm, name: say("norm_statistics_ln") },
      { type: "bar", x: first, y: data.swap_rms_norm, name: say("norm_statistics_rms_name") },
    ], { ...lineLayout(say("norm_statistics_sentence1"), say("norm_statistics_moved"), { xaxis: { type: "category" }, yaxis: { rangemode: "tozero" } }), barmode: "group" }, "norm_statistics_swap");
  },
};
