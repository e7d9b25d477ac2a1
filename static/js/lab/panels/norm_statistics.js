// LayerNorm against BatchNorm (and RMSNorm) on one batch of two sentences (the norm_statistics experiment).

import { draw, tokenLabels } from "../../shared/plot.js";
import { int, LAYERS, str } from "../state.js";
import { fmt, lineLayout, range, selectField, textField } from "../ui.js";

/** Category labels of one padded sentence: "1 · 0·the" … then "1 · pad 5" for its pad positions. */
function labels(sentence, row, width, padWord) {
  const own = tokenLabels(sentence.tokens).map((t) => `${row} · ${t}`);
  return [...own, ...Array.from({ length: width - own.length }, (_, i) => `${row} · ${padWord} ${own.length + i}`)];
}

/** A rounding-sized number: exactly 0 as "0", else one significant digit in e-notation. */
const small = (v) => (v === 0 ? "0" : v.toExponential(1));

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

  /**
   * Many models give each sentence's first token a residual vector hundreds of times longer than the rest
   * (SmolLM2: rms ≈ 1000 against ≈ 7). On one linear axis that bar flattens every other token's, so the axis
   * then ends just above the other tokens and the cut bars carry their true value written on top.
   */
  firstTokenCut(data, x, sigma, rms, mean, say) {
    const firsts = new Set(data.sentences.map((_, i) => i * data.width));
    const heights = (keep) => [sigma, rms, mean.map((v) => (v === null ? null : Math.abs(v)))]
      .flatMap((ys) => ys.filter((v, i) => v !== null && keep(i)));
    const rest = Math.max(...heights((i) => !firsts.has(i)));
    const first = Math.max(...heights((i) => firsts.has(i)));
    if (!(rest > 0) || first < 4 * rest) return null;
    const top = rest * 1.25;
    const low = Math.min(0, ...mean.filter((v, i) => v !== null && !firsts.has(i))) * 1.25;
    const cutAt = [...firsts].filter((i) => Math.max(sigma[i] ?? 0, rms[i] ?? 0, Math.abs(mean[i] ?? 0)) > top);
    return {
      range: [low, top],
      annotations: cutAt.map((i) => ({ x: x[i], y: top, yanchor: "top", showarrow: false, text: `↑ ${fmt(rms[i], 0)}`,
        font: { size: 13 }, bgcolor: "rgba(255,255,255,0.85)" })),
      vars: {
        top: fmt(top, 2),
        firsts: cutAt.map((i) => say("norm_statistics_cut_token", { token: x[i], sigma: fmt(sigma[i], 1), rms: fmt(rms[i], 1), mean: fmt(mean[i], 2) })).join(say("norm_statistics_cut_join")),
      },
    };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const pad = say("norm_statistics_pad");
    const x = data.sentences.flatMap((sen, i) => labels(sen, i + 1, data.width, pad));
    const of = (key) => data.sentences.flatMap((sen) => sen[key]);
    const maxOf = (xs) => Math.max(...xs);
    const n1 = data.sentences[0].tokens.length;
    const vars = {
      model: data.model, layer: data.layer, d_model: data.d_model, width: data.width, pads: data.pad_positions, real: data.real_tokens,
      n1, n2: data.sentences[1].tokens.length, own: say(data.norm === "layernorm" ? "norm_statistics_own_ln" : "norm_statistics_own_rms"),
      diff: small(data.model_scale_diff),
      input: say(data.norm_placement === "pre" ? "norm_statistics_input_pre" : "norm_statistics_input_post"),
      ln: small(maxOf(data.swap_layer_norm)), rms: small(maxOf(data.swap_rms_norm)), bn: fmt(maxOf(data.swap_batch_norm), 3),
      sigma_lo: fmt(Math.min(...data.bn_sigma), 3), sigma_hi: fmt(maxOf(data.bn_sigma), 3),
    };
    const sigma = of("ln_sigma"), rms = of("rms"), mean = of("ln_mean");
    const cut = this.firstTokenCut(data, x, sigma, rms, mean, say);
    const note = say("norm_statistics_ln_note", vars) + (cut ? ` ${say("norm_statistics_cut_note", cut.vars)}` : "");
    draw(board.card("ns-ln", { title: say("norm_statistics_ln_title", vars), note }), [
      { type: "bar", x, y: sigma, name: say("norm_statistics_ln_sigma") },
      { type: "bar", x, y: rms, name: say("norm_statistics_rms") },
      { type: "scatter", mode: "markers", x, y: mean, name: say("norm_statistics_ln_mean"), marker: { size: 9, symbol: "diamond" } },
    ], {
      ...lineLayout("", say("norm_statistics_value"), { xaxis: { type: "category", tickangle: -50 }, yaxis: cut ? { range: cut.range } : {} }),
      barmode: "group", height: 380, annotations: cut ? cut.annotations : [],
    }, "norm_statistics_tokens");
    const features = data.bn_mean.map((_, i) => i);
    draw(board.card("ns-bn", { title: say("norm_statistics_bn_title", vars), className: "half", note: say("norm_statistics_bn_note", vars) }), [
      { x: features, y: data.bn_sigma, mode: "lines", name: say("norm_statistics_bn_sigma") },
      { x: features, y: data.bn_mean, mode: "lines", name: say("norm_statistics_bn_mean") },
    ], { ...lineLayout(say("norm_statistics_feature"), say("norm_statistics_value")), height: 360 }, "norm_statistics_features");
    const first = tokenLabels(data.sentences[0].tokens);
    draw(board.card("ns-swap", { title: say("norm_statistics_swap_title", vars), className: "half", note: say("norm_statistics_swap_note", vars) }), [
      { type: "bar", x: first, y: data.swap_batch_norm, name: say("norm_statistics_bn") },
      { type: "bar", x: first, y: data.swap_layer_norm, name: say("norm_statistics_ln") },
      { type: "bar", x: first, y: data.swap_rms_norm, name: say("norm_statistics_rms_name") },
    ], { ...lineLayout(say("norm_statistics_sentence1"), say("norm_statistics_moved"), { xaxis: { type: "category" }, yaxis: { rangemode: "tozero" } }), barmode: "group" }, "norm_statistics_swap");
  },
};
