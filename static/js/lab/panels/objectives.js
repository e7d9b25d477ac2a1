// Why decoder-only won: the decoder's loss at every position from one pass (measured), BERT's masked
// positions and T5's spans, signals per pass at the same FLOPs, generation cost (formulas) (the objectives experiment).

import { draw, heatmap, tokenLabels } from "../../shared/plot.js";
import { h, tokenTexts } from "../../shared/dom.js";
import { int } from "../state.js";
import { fmt, lineLayout, numberField } from "../ui.js";

const OBJECTIVES = ["causal", "masked", "span"];

/** Signals per GFLOP: a tiny model gets hundreds, a real one a few, so the digits follow the size. */
function perGflop(v) {
  return fmt(v, v >= 100 ? 0 : v >= 10 ? 1 : 2);
}

function quoted(tokens, positions, sep) {
  const shown = tokenTexts(tokens);
  return positions.map((p) => `“${shown[p]}”`).join(sep);
}

export default {
  fields: { seed: int(0, "os") }, // BERT's masked positions

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, seed: v.seed }),

  controls({ v, say }) {
    return [numberField("seed", v.seed, say("objectives_seed"), { min: 0, max: 99999 })];
  },

  vars(data, say) {
    const { causal, masked, span, compute, signals, generation } = data;
    const losses = causal.losses;
    const easiest = losses.indexOf(Math.min(...losses));
    const hardest = losses.indexOf(Math.max(...losses));
    const rows = Object.fromEntries(signals.map((r) => [r.objective, r]));
    const last = generation.new_tokens.length - 1;
    return {
      model: data.model, n: data.tokens.length, signals: causal.signals, mean: fmt(causal.mean, 2),
      easy: tokenTexts(data.tokens)[easiest + 1], easy_loss: fmt(losses[easiest], 2),
      hard: tokenTexts(data.tokens)[hardest + 1], hard_loss: fmt(losses[hardest], 2),
      seed: masked.seed, count: masked.signals, candidates: masked.candidates, masked: quoted(data.tokens, masked.positions, say("objectives_list_sep")),
      pct: fmt((100 * masked.signals) / masked.candidates, 0), rate: fmt(100 * masked.rate, 0),
      t5_tokens: span.tokens, corrupted: span.corrupted, spans: span.spans, mean_span: span.mean_span,
      input_length: span.input_length, target_length: span.target_length,
      params: fmt(compute.non_embedding), attn: fmt(compute.attention), mlp: fmt(compute.mlp), norms: fmt(compute.norms),
      per_token: fmt(compute.flops_per_token), gflop: fmt(compute.flops_per_pass / 1e9, 4), unembed: fmt(compute.unembedding_flops_per_token),
      c: rows.causal.signals, b: rows.masked.signals, t: rows.span.signals, t_read: rows.span.tokens_read,
      c_g: perGflop(rows.causal.signals_per_gflop), b_g: perGflop(rows.masked.signals_per_gflop), t_g: perGflop(rows.span.signals_per_gflop),
      ratio: fmt(rows.causal.signals_per_gflop / rows.masked.signals_per_gflop, 1),
      m: generation.new_tokens[last], cached: fmt(generation.cached[last]), recomputed: fmt(generation.recomputed[last]),
      gen_ratio: fmt(generation.recomputed[last] / generation.cached[last], 1),
    };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    // the uniform guess over the vocabulary scores ln V at every position: a bar above it is worse than blind
    const vocab = ctx.info.vocab_size;
    const uniform = Math.log(vocab);
    const vars = { ...this.vars(data, say), vocab: fmt(vocab), uniform: fmt(uniform, 2),
      above: data.causal.losses.filter((v) => v > uniform).length };
    const labels = tokenLabels(data.tokens);
    const predicted = labels.slice(1); // loss i is the bar of token i + 1, the one predicted
    const losses = data.causal.losses;
    draw(board.card("obj-causal", { title: say("objectives_causal_title", vars), note: say("objectives_causal_note", vars) }), [
      { type: "bar", x: predicted, y: losses, name: say("objectives_loss"), text: losses.map((v) => fmt(v, 2)), textposition: "outside", cliponaxis: false,
        hovertemplate: `%{x}<br>${say("objectives_loss")} = %{y:.4f}<extra></extra>` },
      { type: "scatter", mode: "lines", x: predicted, y: predicted.map(() => data.causal.mean), name: say("objectives_mean", vars), line: { dash: "dot" } },
      { type: "scatter", mode: "lines", x: predicted, y: predicted.map(() => uniform), name: say("objectives_uniform", vars), line: { dash: "dash", color: "#c0392b" } },
    ], lineLayout(say("objectives_predicted"), say("objectives_loss"), { xaxis: { type: "category", tickangle: -40 }, yaxis: { rangemode: "tozero" } }), "objectives_causal");

    const masked = new Set(data.masked.positions);
    const z = [data.tokens.map((_, i) => (i > 0 ? 1 : 0)), data.tokens.map((_, i) => (masked.has(i) ? 1 : 0))];
    const rowNames = [say("objectives_gpt_row"), say("objectives_bert_row", vars)];
    draw(board.card("obj-positions", { title: say("objectives_positions_title"), note: say("objectives_positions_note", vars) }), [
      { ...heatmap({ z, x: labels, y: rowNames, signed: false, zmin: 0, zmax: 1, showscale: false, annotate: false, valueLabel: say("objectives_carries") }), xgap: 2, ygap: 2 },
    ], { height: 240, margin: { l: 90, r: 20, t: 20, b: 80 },
      xaxis: { type: "category", tickangle: -40, automargin: true }, yaxis: { type: "category", automargin: true, autorange: "reversed" } }, "objectives_positions");

    const rows = OBJECTIVES.map((name) => data.signals.find((r) => r.objective === name));
    // a hybrid (Qwen3.5): the token mixers' count holds its gated DeltaNet layers too (model.parameter_counts)
    if ((ctx.info.config.deltanet_layers || []).length) vars.attn = say("objectives_attn_deltanet", { attn: vars.attn });
    draw(board.card("obj-signals", { title: say("objectives_signals_title"), className: "half", note: say("objectives_signals_note", vars) }), [
      { type: "bar", x: OBJECTIVES.map((name) => say(`objectives_${name}`)), y: rows.map((r) => r.signals), name: say("objectives_signals"),
        text: rows.map((r) => say("objectives_per_gflop", { v: perGflop(r.signals_per_gflop) })), textposition: "outside", cliponaxis: false },
    ], lineLayout("", say("objectives_signals"), { xaxis: { type: "category" }, yaxis: { rangemode: "tozero" } }), "objectives_signals");

    const gen = data.generation;
    draw(board.card("obj-generation", { title: say("objectives_gen_title", vars), className: "half", note: say("objectives_gen_note", vars) }), [
      { x: gen.new_tokens, y: gen.cached, mode: "lines+markers", name: say("objectives_cached") },
      { x: gen.new_tokens, y: gen.recomputed, mode: "lines+markers", name: say("objectives_recomputed") },
    ], lineLayout(say("objectives_new_tokens"), say("objectives_gen_positions"), { xaxis: { range: [0, gen.new_tokens.length + 1] }, yaxis: { rangemode: "tozero" } }), "objectives_generation");

    board.block("obj-why", h("div", {}, h("h3", { text: say("objectives_why_title") }), h("p", { class: "lab-note", text: say("objectives_why", vars) })));
  },
};
