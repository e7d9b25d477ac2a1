// Positions: sinusoidal PE·PEᵀ, RoPE's rotation and its relative scores, ALiBi, and what happens
// past the trained length (the positions experiment); then, when a member of the positional-encoding
// family is served, its table and a live shuffled-sentence demo (pe_family.js).

import { api, Tensor } from "../../shared/api.js";
import { draw, fitMargins, heatmap, indexLabels } from "../../shared/plot.js";
import { h } from "../../shared/dom.js";
import { int, str } from "../state.js";
import { fmt, lineLayout, numberField } from "../ui.js";
import { demoBlock, familyBlock, familyTable, loadDemo } from "../pe_family.js";

export default {
  // member, seed: the family demo's member ("" = the lab's model if it is one, else the first) and its shuffle
  fields: { length: int(32, "len"), pair: int(0, "pair"), member: str("", "pem"), seed: int(0, "pss") },

  async load({ s, info, v, ask }) {
    const family = familyTable(s.models, await api.positionalKinds());
    // the demo fails in its own place: the formulas above it still show
    const demo = family ? loadDemo(s, v, family).then((value) => ({ value }), (error) => ({ error })) : null;
    const body = { model: s.model, length: v.length, pair: v.pair };
    try {
      return { answer: await ask(body), refused: null, family, demo: await demo };
    } catch (error) {
      if (error.code !== "beyond_context") throw error;
      // learned positions stop at n_ctx: the formulas still run at the model's sizes
      const sizes = { length: v.length, pair: v.pair, d_model: info.config.d_model, n_heads: info.n_heads };
      // refused: said in the page's language from n_ctx (the server's message is English)
      return { answer: await ask(sizes), refused: true, family, demo: await demo };
    }
  },

  controls({ v, say }) {
    return [numberField("length", v.length, say("positions_length"), { min: 2, max: 256 }), numberField("pair", v.pair, say("positions_pair"), { min: 0, max: 256 })];
  },

  vars(data) {
    const a = data.answer;
    return { length: a.length, n_ctx: a.n_ctx ?? "–", d_model: a.d_model, d_head: a.d_head, spread: a.rope.max_spread.toExponential(1), pair: a.pair, kind: a.kind || "–" };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const a = data.answer;
    const vars = this.vars(data);
    const pos = indexLabels(a.length);
    const status = data.refused
      ? h("p", { class: "lab-error", text: say("positions_beyond_refused", { ...vars, n_ctx: ctx.info.config.n_ctx, last: ctx.info.config.n_ctx - 1 }) })
      : h("p", { class: "lab-note", text: a.beyond_context ? say("positions_beyond_runs", vars) : say("positions_within_context", vars) });
    board.block("pos-status", status);
    const sim = a.sinusoidal.similarity.data; // [pos, pos] nested lists (encoding "list")
    draw(board.card("pos-sin", { title: say("positions_sin_title", vars), className: "half", note: say("positions_sin_note", vars) }),
      [heatmap({ z: sim, x: pos, y: pos, signed: true, annotate: false, valueLabel: "PE·PE" })],
      { height: 340, xaxis: { title: { text: "n" } }, yaxis: { title: { text: "m" }, autorange: "reversed" } }, "sinusoidal_similarity");
    draw(board.card("pos-dist", { title: say("positions_dist_title"), className: "half", note: say("positions_dist_note", vars) }),
      [{ x: pos.map(Number), y: a.sinusoidal.by_distance, mode: "lines+markers", name: say("positions_sinusoidal") },
        ...(a.learned ? [{ x: pos.map(Number), y: a.learned.by_distance, mode: "lines+markers", name: say("positions_learned") }] : [])],
      lineLayout(say("positions_distance"), say("positions_similarity")), "similarity_by_distance");
    const pts = a.rope.points;
    draw(board.card("pos-rope-circle", { title: say("positions_rope_circle_title", vars), className: "half", note: say("positions_rope_circle_note", vars) }),
      [{ x: pts.map((p) => p[0]), y: pts.map((p) => p[1]), mode: "markers+text", text: pos, textposition: "top center", marker: { size: 9, color: pos.map(Number), colorscale: "Viridis" }, name: say("positions_position") }],
      { height: 340, xaxis: { range: [-1.3, 1.3], zeroline: true, title: { text: `x${a.pair}` } }, yaxis: { range: [-1.3, 1.3], scaleanchor: "x", title: { text: `x${a.pair + a.d_head / 2}` } } }, "rope_pair");
    const scores = new Tensor(a.rope.scores).matrix("q_pos", "k_pos");
    draw(board.card("pos-rope-scores", { title: say("positions_rope_scores_title"), className: "half", note: say("positions_rope_scores_note", vars) }),
      [heatmap({ z: scores, x: pos, y: pos, signed: true, annotate: false, valueLabel: "q_m·k_n" })],
      { height: 340, xaxis: { title: { text: "n" } }, yaxis: { title: { text: "m" }, autorange: "reversed" } }, "rope_scores");
    const bias = new Tensor(a.alibi.bias);
    const slopes = a.alibi.slopes.map((v) => fmt(v, 4)).join(", ");
    const alibi = board.card("pos-alibi", { title: say("positions_alibi_title", { n_heads: a.n_heads }), note: say("positions_alibi_note", { slopes }) });
    const maps = a.alibi.slopes.map((_, head) => ({ ...heatmap({ z: bias.matrix("q_pos", "k_pos", { head }), x: pos, y: pos, signed: true, annotate: false, showscale: head === 0 }), xaxis: `x${head + 1}`, yaxis: `y${head + 1}` }));
    const r = fitMargins(alibi, { colorbar: [maps[0].zmin, maps[0].zmax] }).r; // the first map's colour bar, right of the last
    draw(alibi, maps, { height: 300, grid: { rows: 1, columns: a.n_heads, pattern: "independent" }, margin: { l: 40, r, t: 30, b: 40 } }, "alibi");
    if (data.family) {
      board.block("pe-family", familyBlock(data.family, ctx.s, say));
      board.block("pe-demo", demoBlock(data.family, data.demo, ctx.s, ctx.v, say));
    }
  },
};
