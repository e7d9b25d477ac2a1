// From logits to a token: temperature, top-k, top-p, and seeded draws (POST /api/lab/sampling).

import { draw, safe } from "../../shared/plot.js";
import { h, visible } from "../../shared/dom.js";
import { api } from "../../shared/api.js";
import { fmt, lineLayout, numberField } from "../ui.js";

export default {
  load(s, info) {
    if (info.architecture === "encoder") return Promise.resolve(null);
    const body = { model: s.model, text: s.text, temperature: s.temperature, seed: s.seed, draws: s.draws, show: 15 };
    if (s.topK > 0) body.top_k = s.topK;
    if (s.topP < 1) body.top_p = s.topP;
    return api.lab("sampling", body);
  },

  controls(s, say) {
    return [
      numberField("temperature", s.temperature, say("temperature"), { min: 0.05, max: 10, step: 0.05, kind: "num" }),
      numberField("topK", s.topK, say("top_k"), { min: 0, max: 1000 }),
      numberField("topP", s.topP, say("top_p"), { min: 0.01, max: 1, step: 0.05, kind: "num" }),
      numberField("seed", s.seed, say("seed"), { min: 0, max: 99999 }),
      numberField("draws", s.draws, say("draws"), { min: 1, max: 200 }),
    ];
  },

  vars(data) {
    return { kept_k: data.kept.top_k, kept: data.kept.final, seed: data.seed, n: data.draws.length, h0: fmt(data.entropy.original, 2), h1: fmt(data.entropy.final, 2), t: data.temperature };
  },

  draw(board, data, c) {
    const { say } = c;
    if (!data) {
      board.block("sampling-none", h("p", { class: "lab-note", text: say("sampling_encoder") }));
      return;
    }
    const labels = data.rows.map((r, i) => safe(`${i + 1}·${visible(r.text)}`));
    const steps = ["original", "tempered", "top_k", "final"];
    draw(board.card("sampling-bars", { title: say("sampling_title"), className: "half", note: say("sampling_note", this.vars(data)) }),
      steps.map((step) => ({ type: "bar", x: labels, y: data.rows.map((r) => r[step]), name: say(`dist_${step}`) })),
      { ...lineLayout("", say("probability"), { xaxis: { type: "category", tickangle: -40 } }), barmode: "group" }, "sampling");
    const chips = data.draw_text.map((text, i) => h("li", { class: "chip" }, h("span", { class: "chip-text", text: visible(text) }), h("span", { class: "chip-id", text: String(data.draws[i]) })));
    board.block("sampling-draws", h("div", {},
      h("h3", { text: say("draws_title", this.vars(data)) }),
      h("ul", { class: "chips draws" }, chips),
      h("p", { class: "lab-note", text: say("draws_note", this.vars(data)) })), "half");
  },
};
