// Attention weight is not importance: each head's weight against the effect of ablating it (the ablation experiment).

import { draw } from "../../shared/plot.js";
import { tokenText, tokenTexts } from "../../shared/dom.js";
import { int, POSITIONS } from "../state.js";
import { fmt, lineLayout, numberField } from "../ui.js";

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

export default {
  fields: { position: int(-1, "ap", POSITIONS) }, // -1: the last position

  load({ s, v, ask }) {
    const body = { model: s.model, text: s.text };
    if (v.position >= 0) body.position = v.position;
    return ask(body);
  },

  /** What runs while the panel waits (render.js showWorking): every head zeroed in its own copy, in batched passes. */
  working({ info, s, say }) {
    const layers = info.architecture === "encoder-decoder" ? (info.config.decoder_layers ?? info.n_layers) : info.n_layers;
    return say("ablation_working", { model: s.model, heads: layers * info.n_heads, layers });
  },

  controls({ v, say }) {
    return [numberField("position", v.position, say("ablation_position"), { min: -1, max: 512 })];
  },

  draw(board, data, ctx) {
    const MAX_NAMED = 8;
    const { say } = ctx;
    const heads = data.heads;
    const name = (e) => `L${e.layer}H${e.head}`;
    const cut = median(heads.map((e) => e.max_weight));
    const effect = (e) => Math.abs(e.prob_change);
    const strong = heads.filter((e) => e.max_weight >= cut).sort((a, b) => effect(a) - effect(b))[0];
    const diffuse = heads.filter((e) => e.max_weight < cut).sort((a, b) => effect(b) - effect(a))[0] || strong;
    const largest = [...heads].sort((a, b) => effect(b) - effect(a))[0]; // the largest effect of all, whatever its weight
    const named = new Set([strong, diffuse, ...[...heads].sort((a, b) => effect(b) - effect(a)).slice(0, MAX_NAMED - 2)]);
    const vars = {
      pos: data.position, token: tokenTexts(data.tokens)[data.position], chosen: tokenText({ text: data.chosen_text }), p: fmt(data.clean_prob, 4),
      a: name(strong), a_w: fmt(strong.max_weight, 2), a_e: fmt(strong.prob_change, 4),
      b: name(diffuse), b_w: fmt(diffuse.max_weight, 2), b_e: fmt(diffuse.prob_change, 4),
      c: name(largest), c_w: fmt(largest.max_weight, 2), c_e: fmt(largest.prob_change, 4), n: heads.length,
      none: fmt(data.none_ablated.prob_change, 1),
    };
    draw(board.card("abl-scatter", { title: say("ablation_weight_effect_title", vars), className: "half", note: say("ablation_note", vars) }), [{
      type: "scatter", mode: "markers+text", x: heads.map((e) => e.max_weight), y: heads.map((e) => e.prob_change),
      // a 30 × 9 model has 270 heads: name only the two the note talks about and the largest effects
      text: heads.map((e) => (named.has(e) ? name(e) : "")), hovertext: heads.map(name), hoverinfo: "text+x+y",
      textposition: "top center", name: say("ablation_heads"),
      // the colour is the head's layer: its colour bar says so
      marker: { size: 10, color: heads.map((e) => e.layer), colorscale: "Viridis", showscale: true,
        colorbar: { title: { text: say("ablation_colour"), side: "right" }, thickness: 12 } },
    }], lineLayout(say("ablation_weight"), say("ablation_effect")), "ablation");
    const loss = heads.map((e) => e.loss_change);
    draw(board.card("abl-loss", { title: say("ablation_loss_title"), className: "half", note: say("ablation_loss_note", vars) }), [
      { type: "bar", x: heads.map(name), y: loss, name: say("ablation_loss") },
    ], lineLayout("", say("ablation_loss"), { xaxis: { type: "category" } }), "ablation_loss");
  },
};
