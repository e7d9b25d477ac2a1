// What a quantized file's precision does: the float32 run (what this site computes) against the activations
// rounded to 8-bit blocks before every quantized linear layer (an emulation of llama.cpp's rounding) and against
// the weights re-quantized to a coarser type; KL per position, top-1 agreement, the top next tokens, the weights'
// error per layer (the quantization experiment). Every number shown comes from the answer.

import { draw, safe, tokenLabels } from "../../shared/plot.js";
import { h, tokenText, tokenTexts } from "../../shared/dom.js";
import { int, str } from "../state.js";
import { fmt, lineLayout, numberField, selectField } from "../ui.js";

const TYPES = ["none", "Q8_0", "Q4_1", "Q4_0"];
const percent = (x) => `${fmt(100 * x, 1)} %`;

export default {
  fields: { activations: str("on"), requantize: str("Q8_0"), top: int(5) },

  load({ s, v, ask }) {
    return ask({ model: s.model, text: s.text, activations: v.activations !== "off", requantize: TYPES.includes(v.requantize) ? v.requantize : "none", top: v.top });
  },

  controls({ v, say }) {
    return [
      selectField("activations", [["on", say("quantization_on")], ["off", say("quantization_off")]], v.activations, say("quantization_activations")),
      selectField("requantize", TYPES.map((t) => [t, t === "none" ? say("quantization_none") : t]), v.requantize, say("quantization_requantize")),
      numberField("top", v.top, say("quantization_top"), { min: 1, max: 10 }),
    ];
  },

  draw(board, data, ctx) {
    const { say, s } = ctx;
    const sep = s.texts[s.lang].separator; // between sentences: " " in English, "" in Chinese
    const name = (run) => (run.kind === "activations" ? say("quantization_run_activations") : say("quantization_run_requantized", { type: run.type }));
    const last = data.tokens.length - 1;
    const types = Object.entries(data.file_types).map(([t, n]) => `${n} × ${t}`).join(", ");
    const vars = {
      rounded: data.rounded_inputs, inputs: data.linear_inputs, forwards: data.forwards, types,
      token: `“${tokenTexts(data.tokens)[last]}”`, position: last,
    };

    // the numbers of each run, in one table, and what was rounded
    const rows = data.runs.map((run) => h("tr", {},
      h("td", { text: name(run) }), h("td", { text: fmt(run.mean_kl, 4) }), h("td", { text: fmt(run.max_kl, 4) }),
      h("td", { text: percent(run.agreement) }), h("td", { text: `${tokenText(run.top1)} (${fmt(run.top1.other, 3)})` })));
    const head = h("tr", {}, ...["quantization_run", "quantization_mean_kl", "quantization_max_kl", "quantization_agreement", "quantization_top1"]
      .map((k) => h("th", { text: say(k) })));
    const which = data.from_file ? say("quantization_from_file", vars) : say("quantization_not_file", vars);
    board.block("quant-summary", h("div", {},
      h("h3", { text: say("quantization_summary_title") }),
      h("table", { class: "kv-table" }, h("thead", {}, head), h("tbody", {}, rows)),
      h("p", { class: "lab-note", text: [which, say("quantization_work", vars)].join(sep) })), "half");
    board.block("quant-caveat", h("div", {},
      h("h3", { text: say("quantization_caveat_title") }),
      h("p", { class: "lab-note", text: say("quantization_caveat") })), "half");

    // KL per position: how far each run's next-token distribution is from the float32 run's
    const labels = tokenLabels(data.tokens);
    draw(board.card("quant-kl", { title: say("quantization_kl_title"), note: say("quantization_kl_note", vars) }),
      data.runs.map((run) => ({
        x: labels, y: run.kl, mode: "lines+markers", name: name(run),
        marker: { symbol: run.agree.map((same) => (same ? "circle" : "x")), size: run.agree.map((same) => (same ? 7 : 11)) },
        hovertemplate: `%{x}<br>KL = %{y:.5f}<extra>${safe(name(run))}</extra>`,
      })),
      lineLayout(say("quantization_position"), say("quantization_kl_axis"), { xaxis: { type: "category", tickangle: labels.length > 8 ? -45 : 0 }, yaxis: { rangemode: "tozero" } }),
      "quantization_kl");

    // the float32 run's top next tokens at the last position, with each run's probability of them
    const top = data.runs[0].top;
    const names = top.map((t, i) => safe(`${i + 1}·${tokenText(t)}`));
    draw(board.card("quant-top", { title: say("quantization_top_title", vars), className: "half", note: say("quantization_top_note", vars) }), [
      { type: "bar", x: names, y: top.map((t) => t.float32), name: say("quantization_float32") },
      ...data.runs.map((run) => ({ type: "bar", x: names, y: run.top.map((t) => t.other), name: name(run) })),
    ], { ...lineLayout("", say("probability"), { xaxis: { type: "category", tickangle: -40 }, yaxis: { rangemode: "tozero" } }), barmode: "group" }, "quantization_top");

    // the re-quantized weights' error, per layer
    const errs = data.weight_error;
    if (errs) {
      const layers = errs.attention.map((_, l) => String(l));
      const wvars = { ...vars, type: errs.type, unembedding: percent(errs.unembedding) };
      draw(board.card("quant-weights", { title: say("quantization_weights_title", wvars), className: "half", note: say("quantization_weights_note", wvars) }), [
        { x: layers, y: errs.attention.map((x) => 100 * x), mode: "lines+markers", name: say("quantization_attention") },
        { x: layers, y: errs.ffn.map((x) => 100 * x), mode: "lines+markers", name: say("quantization_ffn") },
      ], lineLayout(say("layer"), say("quantization_error_axis"), { xaxis: { type: "category" }, yaxis: { rangemode: "tozero" } }), "quantization_weights");
    }
  },
};
