// From logits to a token: temperature, top-k, top-p, and seeded draws (the sampling experiment).

import { draw, safe } from "../../shared/plot.js";
import { h, tokenText } from "../../shared/dom.js";
import { int, num } from "../state.js";
import { fmt, lineLayout, numberField } from "../ui.js";

export default {
  // top_k 0 and top_p 1: that filter off
  fields: { temperature: num(1, "T"), top_k: int(0, "k"), top_p: num(1, "p"), seed: int(0, "seed"), draws: int(20, "n") },

  load({ s, v, ask }) {
    const body = { model: s.model, text: s.text, temperature: v.temperature, seed: v.seed, draws: v.draws, show: 15 };
    if (v.top_k > 0) body.top_k = v.top_k;
    if (v.top_p < 1) body.top_p = v.top_p;
    return ask(body);
  },

  controls({ v, say }) {
    return [
      numberField("temperature", v.temperature, say("sampling_temperature"), { min: 0.05, max: 10, step: 0.05, kind: "num" }),
      numberField("top_k", v.top_k, say("sampling_top_k"), { min: 0, max: 1000 }),
      numberField("top_p", v.top_p, say("sampling_top_p"), { min: 0.01, max: 1, step: 0.05, kind: "num" }),
      numberField("seed", v.seed, say("seed"), { min: 0, max: 99999 }),
      numberField("draws", v.draws, say("sampling_draws"), { min: 1, max: 200 }),
    ];
  },

  vars(data) {
    return { kept_k: data.kept.top_k, kept: data.kept.final, seed: data.seed, n: data.draws.length, h0: fmt(data.entropy.original, 2), h1: fmt(data.entropy.final, 2), t: data.temperature };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const labels = data.rows.map((r, i) => safe(`${i + 1}·${tokenText(r)}`));
    const steps = ["original", "tempered", "top_k", "final"];
    draw(board.card("sampling-bars", { title: say("sampling_title"), className: "half", note: say("sampling_note", this.vars(data)) }),
      steps.map((step) => ({ type: "bar", x: labels, y: data.rows.map((r) => r[step]), name: say(`sampling_dist_${step}`) })),
      { ...lineLayout("", say("probability"), { xaxis: { type: "category", tickangle: -40 } }), barmode: "group" }, "sampling");
    const chips = data.draw_text.map((text, i) => h("li", { class: "chip" }, h("span", { class: "chip-text", text: tokenText({ text }) }), h("span", { class: "chip-id", text: String(data.draws[i]) })));
    board.block("sampling-draws", h("div", {},
      h("h3", { text: say("sampling_draws_title", this.vars(data)) }),
      h("ul", { class: "chips draws" }, chips),
      h("p", { class: "lab-note", text: say("sampling_draws_note", this.vars(data)) })), "half");
  },
};
