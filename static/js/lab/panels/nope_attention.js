// A NoPE layer's attention beside a RoPE layer's (the nope_attention experiment, SmolLM3): one head of each, its
// weights and mean weight by distance, and the last query's score on one key moved to every distance. A model
// without NoPE layers is refused here from its config, without asking. Every number shown comes from the answer.

import { categoryAxis, draw, fitMargins, heatmap, rowsHeight, tokenLabels } from "../../shared/plot.js";
import { h, tokenTexts } from "../../shared/dom.js";
import { HEADS, int } from "../state.js";
import { fmt, lineLayout, range, selectField } from "../ui.js";

const HIDDEN = "#c9ced6"; // the plot's background: cells the mask hides are left out and show it
const COLORS = { nope: "#b2302b", rope: "#4a90c8" };

/** The model's NoPE layers, from its config ([] for a model without them). */
const nopeLayers = (info) => (info.architecture === "decoder" ? info.config.nope_layers || [] : []);

export default {
  // nope, rope: the two layers (-1: the server's choice, the first NoPE layer and the RoPE layer nearest below it)
  fields: { nope: int(-1), rope: int(-1), head: int(0, undefined, HEADS) },

  /** Refused on a model with no NoPE layer (the page says nope_attention_refused instead of asking). */
  refuses: (info) => nopeLayers(info).length === 0,

  load({ s, v, ask }) {
    const body = { model: s.model, text: s.text, head: v.head };
    if (v.nope >= 0) body.nope_layer = v.nope;
    if (v.rope >= 0) body.rope_layer = v.rope;
    return ask(body);
  },

  controls({ say, info }, data) {
    const named = (layers) => layers.map((l) => [l, say("nope_attention_layer_n", { layer: l })]);
    return data ? [
      selectField("nope", named(data.nope_layers), data.nope.layer, say("nope_attention_nope_layer"), "int"),
      selectField("rope", named(data.rope_layers), data.rope.layer, say("nope_attention_rope_layer"), "int"),
      selectField("head", range(info.n_heads), data.head, say("head"), "int"),
    ] : [];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const labels = tokenLabels(data.tokens);
    const n = data.tokens.length;
    const word = tokenTexts(data.tokens);
    const sides = [["nope", data.nope], ["rope", data.rope]];
    const moved = (d) => d.moved;
    const vars = {
      nope: data.nope.layer, rope: data.rope.layer, head: data.head, query: data.last_query, key: data.key,
      query_token: word[data.last_query], key_token: word[data.key], distance: data.nope.real_distance,
      nope_score: fmt(data.nope.moved[0], 4), nope_spread: data.nope.moved_spread.toExponential(1),
      rope_min: fmt(Math.min(...moved(data.rope)), 4), rope_max: fmt(Math.max(...moved(data.rope)), 4),
      real_diff: Math.max(data.nope.real_diff, data.rope.real_diff).toExponential(1),
      nope_diff: data.nope.unturned_diff.toExponential(1), nope_scale: fmt(data.nope.score_scale, 3),
      rope_diff: fmt(data.rope.unturned_diff, 3), rope_scale: fmt(data.rope.score_scale, 3),
      nope_layers: ctx.list(data.nope_layers),
    };
    const query = say("nope_attention_query");
    const key = say("nope_attention_key");
    const height = rowsHeight(n, n <= 12 ? 30 : 20, 300);
    for (const [side, d] of sides) {
      const title = say(`nope_attention_${side}_weights_title`, vars);
      const plot = board.card(`nope-${side}`, { title, className: "half", note: say(`nope_attention_${side}_weights_note`, vars) });
      const trace = heatmap({ z: d.weights, x: labels, y: labels, signed: false, zmin: 0, zmax: 1, annotate: false, valueLabel: say("weight") });
      const xaxis = categoryAxis(key, { tickangle: n > 8 ? -45 : 0, automargin: false });
      const yaxis = categoryAxis(query, { autorange: "reversed", automargin: false });
      const margin = fitMargins(plot, { y: labels, x: labels, xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [0, 1] });
      draw(plot, [trace], { height, margin, plot_bgcolor: HIDDEN, xaxis, yaxis }, `nope_attention_${side}_weights`);
    }
    const line = (side, d, y, x) => ({ x, y, mode: "lines+markers", name: say(`nope_attention_${side}_line`, { layer: d.layer }), line: { color: COLORS[side] }, marker: { color: COLORS[side], size: 6 } });
    const distances = range(n).map(([i]) => i);
    draw(board.card("nope-distance", { title: say("nope_attention_distance_title", vars), className: "half", note: say("nope_attention_distance_note", vars) }),
      sides.map(([side, d]) => line(side, d, d.by_distance, distances)),
      lineLayout(say("nope_attention_distance"), say("nope_attention_mean_weight"), { yaxis: { rangemode: "tozero" } }), "nope_attention_by_distance");
    const steps = range(data.last_query + 1).map(([i]) => i);
    const real = sides.map(([side, d]) => ({
      x: [d.real_distance], y: [d.moved[d.real_distance]], mode: "markers", name: say("nope_attention_real", vars),
      marker: { color: COLORS[side], size: 13, symbol: "circle-open", line: { width: 2 } }, showlegend: side === "nope",
    }));
    draw(board.card("nope-moved", { title: say("nope_attention_moved_title", vars), className: "half", note: say("nope_attention_moved_note", vars) }),
      [...sides.map(([side, d]) => line(side, d, d.moved, steps)), ...real],
      lineLayout(say("nope_attention_distance"), say("nope_attention_score")), "nope_attention_moved");
    board.block("nope-check", h("p", { class: "lab-note", text: say("nope_attention_check", vars) }));
  },
};
