// Is the embedding still there? Each stream's cosine with its token's own embedding, per layer and token, and the
// mean per layer beside the cosine with the last stream (the embedding_persistence experiment). Every number
// shown comes from the answer.

import { categoryAxis, draw, fitMargins, heatmap, rowsHeight, tokenLabels } from "../../shared/plot.js";
import { str } from "../state.js";
import { fmt, lineLayout, selectField } from "../ui.js";

export default {
  fields: { stack: str("encoder") }, // an encoder-decoder's stack; the other families have one

  load({ s, info, v, ask }) {
    const body = { model: s.model, text: s.text };
    if (info.architecture === "encoder-decoder") body.stack = v.stack === "decoder" ? "decoder" : "encoder";
    return ask(body);
  },

  controls({ v, say, info }) {
    if (info.architecture !== "encoder-decoder") return [];
    const stacks = [["encoder", say("embedding_persistence_encoder")], ["decoder", say("embedding_persistence_decoder")]];
    return [selectField("stack", stacks, v.stack, say("embedding_persistence_stack"))];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const rows = data.streams.map((name) => (name === "input" ? say("embedding_persistence_input") : say("embedding_persistence_after", { layer: name })));
    const last = data.streams.length - 1;
    const added = data.added.map((what) => say(`embedding_persistence_added_${what}`)).join(say("embedding_persistence_and"));
    const vars = {
      first: fmt(data.mean_to_embedding[Math.min(1, last)], 2), last: fmt(data.mean_to_embedding[last], 2),
      input: fmt(data.mean_to_embedding[0], 2), ratio: fmt(data.mean_norm_ratio[last], 1), layers: last, added,
      final_first: fmt(data.mean_to_final[Math.min(1, last)], 2),
    };
    // the verdict the title asks for, read off the numbers: from block 0 on, does the stream still point near its
    // token's embedding (a mean cosine of 0.5 or more at the end), fade, or lose it at once (at most 0.2 throughout)?
    const after = data.mean_to_embedding.slice(1);
    vars.kept = fmt(after.length ? Math.max(...after) : data.mean_to_embedding[0], 2);
    const verdict = !after.length || data.mean_to_embedding[last] >= 0.5 ? "kept" : Math.max(...after) <= 0.2 ? "drowned" : "fades";
    const half = data.mean_to_final.findIndex((x) => x >= 0.5); // the first stream at least half-way to the last
    vars.half = half <= 0 ? say("embedding_persistence_input") : rows[half];
    const inputNote = say(data.added.length ? "embedding_persistence_input_added" : "embedding_persistence_input_same", vars);
    const sep = ctx.s.texts[ctx.s.lang].separator; // between sentences: " " in English, "" in Chinese
    const grid = board.card("ep-grid", { title: say("embedding_persistence_grid_title"), note: [say(`embedding_persistence_verdict_${verdict}`, vars), inputNote, say("embedding_persistence_grid_note", vars)].join(sep) });
    const labels = tokenLabels(data.tokens);
    const trace = heatmap({ z: data.to_embedding, x: labels, y: rows, zmin: -1, zmax: 1, valueLabel: say("embedding_persistence_cosine") });
    const xaxis = categoryAxis(say("embedding_persistence_token"), { tickangle: labels.length > 8 ? -45 : 0, automargin: false });
    const yaxis = categoryAxis(say("embedding_persistence_stream"), { autorange: "reversed", automargin: false });
    const margin = fitMargins(grid, { y: rows, x: labels, xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [-1, 1] });
    const layout = { height: rowsHeight(rows.length, rows.length <= 12 ? 30 : 16, 260), margin, xaxis, yaxis };
    draw(grid, [trace], layout, "embedding_persistence");
    const low = Math.min(0, ...data.mean_to_embedding, ...data.mean_to_final); // no negative ticks for numbers >= 0
    const short = data.streams.map((name) => (name === "input" ? say("embedding_persistence_input_short") : name)); // the line's x: block numbers
    draw(board.card("ep-mean", { title: say("embedding_persistence_mean_title"), note: say("embedding_persistence_mean_note", vars) }), [
      { x: short, y: data.mean_to_embedding, mode: "lines+markers", name: say("embedding_persistence_to_embedding") },
      { x: short, y: data.mean_to_final, mode: "lines+markers", name: say("embedding_persistence_to_final") },
    ], lineLayout(say("embedding_persistence_after_block"), say("embedding_persistence_mean_cosine"),
      { xaxis: { type: "category" }, yaxis: { range: [low - 0.05, 1.05] } }), "embedding_persistence_mean");
  },
};
