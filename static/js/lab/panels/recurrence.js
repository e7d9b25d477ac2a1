// Recurrence against attention on one sentence (the recurrence experiment): the GRU's N timed steps beside the
// Transformer's L timed blocks, each input embedding's influence on the last position's state against its
// distance, and both models' next-token loss. Every number shown comes from the answer.

import { draw, tokenLabels } from "../../shared/plot.js";
import { visible } from "../../shared/dom.js";
import { str } from "../state.js";
import { fmt, lineLayout, selectField } from "../ui.js";

const GRU = "#1f77b4";
const TRANSFORMER = "#ff7f0e";

function sum(values) {
  return values.reduce((a, b) => a + b, 0);
}

/** Start of each segment when the segments run one after another. */
function starts(durations) {
  let t = 0;
  return durations.map((d) => { const s = t; t += d; return s; });
}

/** A share as a percentage, with two significant digits (0.74%, 11%). */
function pct(share) {
  const p = 100 * share;
  return `${p >= 10 ? fmt(p, 0) : Number(p).toPrecision(2)}%`;
}

/** A number that may be tiny or large, with three significant digits. */
function sig(v) {
  return v >= 100 ? fmt(v, 0) : Number(v).toPrecision(3);
}

export default {
  // the Transformer beside the GRU: one of the two shipped models that read its tokens (not the page's model)
  fields: { transformer: str("pe-rope") },

  load: ({ s, v, ask }) => ask({ text: s.text, transformer: v.transformer === "tiny-gpt" ? "tiny-gpt" : "pe-rope" }),

  controls({ v, say }) {
    const options = [["pe-rope", say("recurrence_pe_rope")], ["tiny-gpt", say("recurrence_tiny_gpt")]];
    return [selectField("transformer", options, v.transformer, say("recurrence_which"))];
  },

  vars(data) {
    const { steps, influence, loss } = data;
    const n = data.tokens.length;
    // influence[i] belongs to distance n - 1 - i. Compared: one token back (i = n - 2) against the mean over the
    // farthest third of the text. The start token (i = 0) is left out: both models treat it apart.
    const k = Math.max(1, Math.floor((n - 1) / 3));
    const far = Array.from({ length: k }, (_, j) => j + 1);
    const mean = (values) => sum(far.map((i) => values[i])) / k;
    const near = n - 2;
    return {
      n, layers: steps.transformer_passes, model: data.transformer.name, rnn: data.recurrent.name,
      rnn_ms: fmt(sum(steps.recurrent_step_ms), 2), tf_ms: fmt(sum(steps.transformer_block_ms), 2),
      step_ms: fmt(sum(steps.recurrent_step_ms) / steps.recurrent_steps, 3),
      long_enough: n - 2 > k, far_from: n - 1 - k, far_to: n - 2,
      tf_near: sig(influence.transformer[near]), tf_far: sig(mean(influence.transformer)),
      tf_ratio: pct(mean(influence.transformer) / influence.transformer[near]),
      rnn_loss: fmt(loss.recurrent_mean, 2), tf_loss: fmt(loss.transformer_mean, 2), uniform: fmt(loss.uniform, 2),
      rnn_params: fmt(data.recurrent.parameters), tf_params: fmt(data.transformer.parameters),
      rnn_seen: data.recurrent.tokens_seen == null ? "–" : fmt(data.recurrent.tokens_seen),
      tf_seen: data.transformer.tokens_seen == null ? "–" : fmt(data.transformer.tokens_seen),
      max: data.max_tokens,
    };
  },

  /** The influence chart's note: this sentence's GRU curve as it falls or dips and rises, the average over the
   * reference sentences likewise, then the Transformer on the same far third. */
  influenceNote(data, vars, say) {
    const { shape, reference } = data.influence;
    const words = (s) => ({ near: sig(s.near), low: sig(s.low), low_at: s.low_at, far: sig(s.far), from: s.far_from, to: s.far_to,
      low_ratio: pct(s.low / s.near), far_ratio: pct(s.far / s.near) });
    const rs = reference.shape;
    const few = reference.sentences[rs.far_to - 1];
    const parts = [say("recurrence_influence_what")];
    if (shape && vars.long_enough) parts.push(say(shape.rises ? "recurrence_gru_u" : "recurrence_gru_falls", words(shape)));
    else parts.push(say("recurrence_influence_short", vars));
    parts.push(say(rs.rises ? "recurrence_reference_u" : "recurrence_reference_falls", { ...words(rs), count: reference.sentences[0], few }));
    if (vars.long_enough) parts.push(say("recurrence_transformer_far", vars));
    return parts.join(" ");
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const vars = this.vars(data);
    const labels = tokenLabels(data.tokens);
    const gruRow = say("recurrence_gru_row", vars);
    const tfRow = say("recurrence_transformer_row", vars);

    // (a) the chain of work: each GRU step after the last; each block once over every token
    const stepMs = data.steps.recurrent_step_ms;
    const blockMs = data.steps.transformer_block_ms;
    draw(board.card("recurrence-steps", { title: say("recurrence_steps_title", vars), note: say("recurrence_steps_note", vars) }), [
      { type: "bar", orientation: "h", y: stepMs.map(() => gruRow), x: stepMs, base: starts(stepMs), name: say("recurrence_gru", vars),
        marker: { color: stepMs.map((_, i) => (i % 2 ? GRU : "#6baed6")), line: { color: "#fff", width: 1 } },
        text: labels, textposition: "inside", insidetextanchor: "middle",
        customdata: labels.map((t, i) => [i + 1, t]),
        hovertemplate: `${say("recurrence_step_hover")}<extra></extra>` },
      { type: "bar", orientation: "h", y: blockMs.map(() => tfRow), x: blockMs, base: starts(blockMs), name: say("recurrence_transformer", vars),
        marker: { color: blockMs.map((_, i) => (i % 2 ? TRANSFORMER : "#fdae6b")), line: { color: "#fff", width: 1 } },
        text: blockMs.map((_, i) => say("recurrence_block_label", { layer: i, n: vars.n })), textposition: "inside", insidetextanchor: "middle",
        customdata: blockMs.map((_, i) => [i]),
        hovertemplate: `${say("recurrence_block_hover", vars)}<extra></extra>` },
    ], { ...lineLayout(say("recurrence_ms"), ""), barmode: "overlay", showlegend: false, height: 230,
      xaxis: { title: { text: say("recurrence_ms") }, rangemode: "tozero", automargin: true },
      yaxis: { type: "category", automargin: true, autorange: "reversed", tickvals: [gruRow, tfRow], ticktext: [gruRow, tfRow] } }, "recurrence_steps");

    // (b) influence of each input embedding on the last position's state, against distance; the note's words are
    // chosen from what each curve does (lab/recurrence.py's curve_shape), never assumed
    const distance = data.influence.distance;
    const ref = data.influence.reference;
    draw(board.card("recurrence-influence", { title: say("recurrence_influence_title", vars), note: this.influenceNote(data, vars, say) }), [
      { x: ref.distance, y: ref.recurrent, mode: "lines", name: say("recurrence_reference", { count: ref.sentences[0] }), line: { color: GRU, dash: "dash" },
        customdata: ref.sentences, hovertemplate: `${say("recurrence_distance")} %{x}<br>%{y:.4g} (%{customdata})<extra></extra>` },
      { x: distance, y: data.influence.recurrent, mode: "lines+markers", name: say("recurrence_gru", vars), line: { color: GRU },
        customdata: labels, hovertemplate: `%{customdata} · ${say("recurrence_distance")} %{x}<br>%{y:.4g}<extra></extra>` },
      { x: distance, y: data.influence.transformer, mode: "lines+markers", name: say("recurrence_transformer", vars), line: { color: TRANSFORMER },
        customdata: labels, hovertemplate: `%{customdata} · ${say("recurrence_distance")} %{x}<br>%{y:.4g}<extra></extra>` },
    ], lineLayout(say("recurrence_distance"), say("recurrence_influence"), { yaxis: { type: "log", dtick: 1 }, xaxis: { rangemode: "tozero" } }), "recurrence_influence");

    // (ctx) next-token loss of both on every token
    const predicted = labels.slice(1);
    draw(board.card("recurrence-loss", { title: say("recurrence_loss_title", vars), note: say("recurrence_loss_note", vars) }), [
      { type: "bar", x: predicted, y: data.loss.recurrent, name: say("recurrence_gru", vars), marker: { color: GRU },
        hovertemplate: `%{x}<br>${say("recurrence_loss")} = %{y:.3f}<extra></extra>` },
      { type: "bar", x: predicted, y: data.loss.transformer, name: say("recurrence_transformer", vars), marker: { color: TRANSFORMER },
        hovertemplate: `%{x}<br>${say("recurrence_loss")} = %{y:.3f}<extra></extra>` },
      { type: "scatter", mode: "lines", x: predicted, y: predicted.map(() => data.loss.uniform), name: say("recurrence_uniform", vars), line: { dash: "dash", color: "#c0392b" } },
    ], lineLayout(say("recurrence_predicted"), say("recurrence_loss"), { xaxis: { type: "category", tickangle: -40 }, yaxis: { rangemode: "tozero" } }), "recurrence_loss");
  },
};
