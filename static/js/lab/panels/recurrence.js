// Recurrence against attention on one sentence (the recurrence experiment): the GRU's N timed steps beside the
// Transformer's L timed blocks, each input embedding's influence on the last position's state against its
// distance, and both models' next-token loss. Every number shown comes from the answer.

import { draw, tokenLabels } from "../../shared/plot.js";
import { visible } from "../../shared/dom.js";
import { fmt, lineLayout } from "../ui.js";

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

/** A number that may be tiny or large, with three significant digits. */
function sig(v) {
  return v >= 100 ? fmt(v, 0) : Number(v).toPrecision(3);
}

export default {
  fields: {},

  load: ({ s, ask }) => ask({ model: s.model, text: s.text }),

  controls() {
    return [];
  },

  vars(data) {
    const { steps, influence, loss } = data;
    const n = data.tokens.length;
    // influence by distance: index i is distance n - 1 - i; the far end is the first token
    const near = n >= 2 ? n - 2 : n - 1; // one token back
    const far = 0;
    const ratio = (values) => values[far] / values[near];
    const perStep = (values) => Math.pow(ratio(values), 1 / Math.max(1, n - 2));
    return {
      n, layers: steps.transformer_passes, model: data.model, rnn: data.recurrent.name,
      rnn_ms: fmt(sum(steps.recurrent_step_ms), 2), tf_ms: fmt(sum(steps.transformer_block_ms), 2),
      step_ms: fmt(sum(steps.recurrent_step_ms) / steps.recurrent_steps, 3),
      far: n - 1, first: visible(data.tokens[0].text),
      rnn_near: sig(influence.recurrent[near]), rnn_far: sig(influence.recurrent[far]),
      tf_near: sig(influence.transformer[near]), tf_far: sig(influence.transformer[far]),
      rnn_ratio: sig(ratio(influence.recurrent)), tf_ratio: sig(ratio(influence.transformer)),
      rnn_per_step: fmt(perStep(influence.recurrent), 3),
      rnn_loss: fmt(loss.recurrent_mean, 2), tf_loss: fmt(loss.transformer_mean, 2), uniform: fmt(loss.uniform, 2),
      rnn_params: fmt(data.recurrent.parameters), tf_params: fmt(data.transformer.parameters),
      rnn_seen: data.recurrent.tokens_seen == null ? "–" : fmt(data.recurrent.tokens_seen),
      tf_seen: data.transformer.tokens_seen == null ? "–" : fmt(data.transformer.tokens_seen),
      max: data.max_tokens,
    };
  },

  draw(board, data, c) {
    const { say } = c;
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
      yaxis: { type: "category", automargin: true, autorange: "reversed" } }, "recurrence_steps");

    // (b) influence of each input embedding on the last position's state, against distance
    const distance = data.influence.distance;
    draw(board.card("recurrence-influence", { title: say("recurrence_influence_title", vars), note: say("recurrence_influence_note", vars) }), [
      { x: distance, y: data.influence.recurrent, mode: "lines+markers", name: say("recurrence_gru", vars), line: { color: GRU },
        customdata: labels, hovertemplate: `%{customdata} · ${say("recurrence_distance")} %{x}<br>%{y:.4g}<extra></extra>` },
      { x: distance, y: data.influence.transformer, mode: "lines+markers", name: say("recurrence_transformer", vars), line: { color: TRANSFORMER },
        customdata: labels, hovertemplate: `%{customdata} · ${say("recurrence_distance")} %{x}<br>%{y:.4g}<extra></extra>` },
    ], lineLayout(say("recurrence_distance"), say("recurrence_influence"), { yaxis: { type: "log" }, xaxis: { rangemode: "tozero" } }), "recurrence_influence");

    // (c) next-token loss of both on every token
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
