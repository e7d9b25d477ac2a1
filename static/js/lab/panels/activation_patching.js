// Activation patching: the clean run's activation copied into the corrupted run, cell by cell, and how much of
// the clean answer comes back (the activation_patching experiment); and the FFN knock-out on the clean run.
// Every number shown comes from the answer.

import { categoryAxis, draw, fitMargins, heatmap, indexLabels, safe } from "../../shared/plot.js";
import { h, tokenText, tokenTexts } from "../../shared/dom.js";
import { str } from "../state.js";
import { fmt, lineLayout, selectField, textField } from "../ui.js";

const GRIDS = ["residual", "attention", "ffn", "heads"]; // the request's `grid` choices, besides "all"

/** Position labels: "3·France", or "3·France/Italy" where the two prompts differ. */
function positionLabels(clean, corrupted) {
  const [cleanTexts, corruptedTexts] = [tokenTexts(clean), tokenTexts(corrupted)];
  return clean.map((t, i) => {
    const a = cleanTexts[i];
    const b = corruptedTexts[i];
    return safe(`${i}·${a === b ? a : `${a}/${b}`}`);
  });
}

export default {
  fields: {
    clean: str("The capital of France is"),
    corrupted: str("The capital of Italy is"), // the contrast chapter 15 uses (France/Italy)
    clean_answer: str(""), // "": the clean run's top token
    corrupted_answer: str(""), // "": the corrupted run's top token (other than the clean answer)
    grid: str("ffn"), // residual, attention, ffn, heads or all
  },

  load({ s, v, ask }) {
    const body = { model: s.model, text: v.clean, corrupted: v.corrupted, grid: v.grid, knockout: true };
    if (v.clean_answer) body.clean_answer = v.clean_answer;
    if (v.corrupted_answer) body.corrupted_answer = v.corrupted_answer;
    return ask(body);
  },

  /** What runs while the panel waits (render.js showWorking); the server counts the forward passes (`forwards`
   * in the answer) and refuses too many with a 422 that says the limit. */
  working({ info, s, say }) {
    return say("activation_patching_working_per_token", { model: s.model, layers: info.n_layers });
  },

  controls({ v, say }) {
    const options = [...GRIDS, "all"].map((g) => [g, say(`activation_patching_grid_${g}`)]);
    return [
      textField("clean", v.clean, say("activation_patching_clean")),
      textField("corrupted", v.corrupted, say("activation_patching_corrupted")),
      textField("clean_answer", v.clean_answer, say("activation_patching_clean_answer"), { size: 8 }),
      textField("corrupted_answer", v.corrupted_answer, say("activation_patching_corrupted_answer"), { size: 8 }),
      selectField("grid", options, v.grid, say("activation_patching_grid")),
    ];
  },

  /** A grid's note, chosen from its numbers: the FFN grid's best cell at layer 0 is the typed word itself (layer 0's FFN
   * on a token mostly carries that token), so the note then says so and names the best cell from layer 1 on. */
  gridWords(grid, gvars, x, layers, say) {
    const flat = grid.scores.flat();
    if (grid.name !== "ffn" || flat.indexOf(Math.max(...flat)) >= x.length || grid.scores.length < 2) return [say(`activation_patching_${grid.name}_note`, gvars)];
    const above = grid.scores.slice(1).flat();
    const best = above.indexOf(Math.max(...above));
    const avars = { ...gvars, max_above: Math.max(...above).toFixed(2), cell_above: `${layers[1 + Math.floor(best / x.length)]} · ${x[best % x.length]}` };
    return [say("activation_patching_ffn_note_layer0", avars), say(Math.max(...above) >= 0.5 ? "activation_patching_ffn_above_strong" : "activation_patching_ffn_above_weak", avars)];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const sep = ctx.s.texts[ctx.s.lang].separator;
    const positions = positionLabels(data.clean_tokens, data.corrupted_tokens);
    const layers = indexLabels(data.grids[0].scores.length, "L");
    const vars = {
      good: tokenText(data.clean_answer), bad: tokenText(data.corrupted_answer),
      d_clean: fmt(data.clean_diff, 3), d_bad: fmt(data.corrupted_diff, 3),
      nothing: fmt(data.checks.nothing, 4), whole: fmt(data.checks.whole_residual, 4),
      forwards: data.forwards.toLocaleString("en-US"),
    };
    board.block("patch-meaning", h("p", { class: "lab-note", text: [say("activation_patching_meaning", vars), say("activation_patching_checks", vars)].join(sep) }));
    for (const grid of data.grids) {
      const heads = grid.columns === "head";
      const x = heads ? indexLabels(grid.scores[0].length, "H") : positions;
      const flat = grid.scores.flat();
      const best = flat.indexOf(Math.max(...flat));
      const gvars = { ...vars, seconds: fmt(grid.seconds, 2), min: fmt(Math.min(...flat), 2), max: fmt(Math.max(...flat), 2),
        cell: `${layers[Math.floor(best / x.length)]} · ${x[best % x.length]}` };
      const title = say(`activation_patching_${grid.name}_title`, gvars);
      const note = [...this.gridWords(grid, gvars, x, layers, say), say("activation_patching_range", gvars)].join(sep);
      const plot = board.card(`patch-${grid.name}`, { title, className: "half", note });
      const value = say("activation_patching_restored");
      // centred on 0 (white): a cell below 0 (the copy pushed towards the corrupted answer) is drawn apart from "no effect"
      const trace = heatmap({ z: grid.scores, x, y: layers, signed: true, zmin: -1, zmax: 1, annotate: false,
        hovertemplate: `%{y}<br>%{x}<br>${value} = %{z:.3f}<extra></extra>` });
      trace.colorbar = { ...trace.colorbar, title: { text: value, side: "right" } };
      const xaxis = categoryAxis(say(heads ? "activation_patching_head" : "activation_patching_position"), { tickangle: heads ? 0 : -30, automargin: false });
      const yaxis = categoryAxis(say("layer"), { autorange: "reversed", automargin: false });
      const margin = fitMargins(plot, { y: layers, x, xSize: xaxis.tickfont.size, xAngle: xaxis.tickangle, colorbar: [-1, 1] });
      margin.r += 24; // the colour bar's title
      const height = Math.max(280, Math.min(560, 110 + 14 * layers.length)) + margin.b - 60;
      draw(plot, [trace], { height, margin, xaxis, yaxis }, `patching_${grid.name}`);
    }
    if (data.knockout) {
      const k = data.knockout;
      const low = k.probs.indexOf(Math.min(...k.probs));
      const kvars = { ...vars, p: fmt(k.clean_prob, 4), low: `L${low}`, p_low: fmt(k.probs[low], 4) };
      // layer 0's FFN reads every token first: knocking it out breaks the whole prompt, so the layers above are named too
      const above = k.probs.slice(1);
      const lowAbove = above.length ? above.indexOf(Math.min(...above)) + 1 : -1;
      Object.assign(kvars, { low_above: `L${lowAbove}`, p_low_above: lowAbove > 0 ? fmt(k.probs[lowAbove], 4) : "" });
      const knockNote = say(low === 0 && lowAbove > 0 ? "activation_patching_knockout_note_layer0" : "activation_patching_knockout_note", kvars);
      const x = layers;
      draw(board.card("patch-knockout", { title: say("activation_patching_knockout_title", kvars), className: "half", note: knockNote }), [
        { type: "bar", x, y: k.probs, name: say("activation_patching_knocked", kvars), marker: { color: "#4a90c8" } },
        { type: "scatter", mode: "lines", x, y: x.map(() => k.clean_prob), name: say("activation_patching_unknocked", kvars), line: { color: "#b2302b", dash: "dash" } },
      ], lineLayout(say("activation_patching_knocked_layer"), say("activation_patching_prob", kvars), { xaxis: { type: "category" }, yaxis: { rangemode: "tozero" } }), "patching_knockout");
    }
  },
};
