// Steering with a difference vector: the mean residual stream of prompts A minus B at a block's input, added
// α times at every position while the model writes; the two continuations side by side, the first step's
// distribution before and after, and the vector's length against the stream's (the steering experiment).

import { draw, safe } from "../../shared/plot.js";
import { h, readText, tokenText } from "../../shared/dom.js";
import { int, LAYERS, str } from "../state.js";
import { fmt, lineLayout, numberField, range, selectField } from "../ui.js";

// The prompt sets (model input, the same in every language), each with the block and α that gave smollm2 a
// visible change (docs/LAB.md): the panel's layer and α until the reader sets them.
const PRESETS = {
  french: {
    a: ["Je suis allé au marché ce matin.", "Il fait très beau aujourd'hui.", "Nous avons mangé du pain et du fromage.", "Elle lit un livre dans le jardin."],
    b: ["I went to the market this morning.", "The weather is very nice today.", "We ate bread and cheese.", "She is reading a book in the garden."],
    prompt: "Yesterday I went to the",
    layer: 6,
    alpha: 1,
  },
  review: {
    a: ["This movie was terrible, I hated every minute.", "A boring, painful film. Avoid it!", "The acting was awful and the story was stupid."],
    b: ["This movie was wonderful, I loved every minute.", "A brilliant, moving film. Highly recommended!", "The acting was superb and the story was beautiful."],
    prompt: "I watched the film last night and I think it",
    layer: 4,
    alpha: 4,
  },
};
const lines = (text) => text.split("\n").map((line) => line.trim()).filter(Boolean);

/** The sets and prompt asked for: a preset's, or the reader's own (empty: the first preset's). */
function sets(v) {
  if (v.preset !== "own") return PRESETS[v.preset] || PRESETS.french;
  const own = { a: lines(v.a), b: lines(v.b), prompt: v.prompt.trim() };
  return { a: own.a.length ? own.a : PRESETS.french.a, b: own.b.length ? own.b : PRESETS.french.b, prompt: own.prompt || PRESETS.french.prompt };
}

/** The block and α asked for: the reader's, else the preset's (its block kept inside a smaller model). */
function setting(v, info) {
  const preset = PRESETS[v.preset] || PRESETS.french;
  const alpha = v.alpha === "" || !Number.isFinite(Number(v.alpha)) ? preset.alpha : Number(v.alpha);
  return { layer: v.layer >= 0 ? v.layer : Math.min(preset.layer, info.n_layers - 1), alpha };
}

function textBox(field, value, label, editable) {
  return h("label", { class: "field steering-set" }, h("span", { text: label }),
    h("textarea", { "data-field": field, "data-kind": "str", rows: 4, cols: 44, readonly: !editable }, value));
}

export default {
  fields: { preset: str("french"), a: str(""), b: str(""), prompt: str(""), layer: int(-1, undefined, LAYERS), alpha: str(""), steps: int(12) },

  load({ s, info, v, ask }) {
    const chosen = sets(v);
    const { layer, alpha } = setting(v, info);
    return ask({ model: s.model, text: chosen.prompt, a: chosen.a, b: chosen.b, layer, alpha, max_new_tokens: v.steps });
  },

  controls({ v, say, info }) {
    const chosen = sets(v);
    const own = v.preset === "own";
    const { layer, alpha } = setting(v, info);
    return [
      selectField("preset", ["french", "review", "own"].map((p) => [p, say(`steering_preset_${p}`)]), v.preset, say("steering_preset")),
      selectField("layer", range(info.n_layers), layer, say("layer"), "int"),
      numberField("alpha", alpha, say("steering_alpha"), { min: -100, max: 100, step: 0.25, kind: "str" }),
      numberField("steps", v.steps, say("steering_steps"), { min: 1, max: 32 }),
      h("div", { class: "steering-sets" },
        textBox("a", chosen.a.join("\n"), say("steering_a"), own),
        textBox("b", chosen.b.join("\n"), say("steering_b"), own),
        textBox("prompt", chosen.prompt, say("steering_prompt"), own)),
    ];
  },

  /** Its fields for a request the experiment answered (the notebook widget draws an answer it did not ask). */
  fromRequest(body, data) {
    return { preset: "own", a: body.a.join("\n"), b: body.b.join("\n"), prompt: body.text, layer: data.layer, alpha: String(data.alpha), steps: body.max_new_tokens ?? 12 };
  },

  vars(data, v) {
    const first = (side) => data.moved.reduce((best, t) => (t[side] > best[side] ? t : best), data.moved[0]);
    const before = first("before");
    const after = first("after");
    return {
      layer: data.layer, alpha: fmt(data.alpha, 2), forwards: data.forwards, na: sets(v).a.length, nb: sets(v).b.length, steps: v.steps,
      v: fmt(data.vector_norm, 1), typ: fmt(data.typical_norm, 1), av: fmt(Math.abs(data.alpha) * data.vector_norm, 1),
      ratio: fmt((Math.abs(data.alpha) * data.vector_norm) / data.typical_norm, 2), n: data.moved.length,
      before: tokenText(before), p_before: fmt(before.before), after: tokenText(after), p_after: fmt(after.after),
    };
  },

  draw(board, data, ctx) {
    const { say, v } = ctx;
    const vars = this.vars(data, v);
    const prompt = readText(data.tokens.map((t) => t.text).join(""));
    const column = (key, side) => h("div", { class: `steering-text steering-${key}` },
      h("h4", { text: say(`steering_${key}`, vars) }),
      h("p", {}, h("span", { class: "steering-prompt", text: prompt }), h("strong", { text: readText(side.text) })));
    board.block("steering-texts", h("div", {},
      h("h3", { text: say("steering_texts_title", vars) }),
      h("div", { class: "steering-columns" }, column("plain", data.plain), column("steered", data.steered)),
      h("p", { class: "lab-note", text: say("steering_texts_note", vars) }),
      h("p", { class: "lab-note", text: say("steering_measured") })));
    const labels = data.moved.map((t, i) => safe(`${i + 1}·${tokenText(t)}`));
    draw(board.card("steering-moved", { title: say("steering_moved_title"), className: "half", note: say("steering_moved_note", vars) }), [
      { type: "bar", x: labels, y: data.moved.map((t) => t.before), name: say("steering_before") },
      { type: "bar", x: labels, y: data.moved.map((t) => t.after), name: say("steering_after") },
    ], { ...lineLayout("", say("probability"), { xaxis: { type: "category", tickangle: -40 } }), barmode: "group" }, "steering_moved");
    const names = [say("steering_norm_typical"), say("steering_norm_vector"), say("steering_norm_scaled")];
    const lengths = [data.typical_norm, data.vector_norm, Math.abs(data.alpha) * data.vector_norm];
    draw(board.card("steering-norm", { title: say("steering_norm_title", vars), className: "half", note: say("steering_norm_note", vars) }), [
      { type: "bar", orientation: "h", x: lengths, y: names, text: lengths.map((x) => fmt(x, 1)), textposition: "auto", name: say("steering_norm_axis"), showlegend: false },
    ], { ...lineLayout(say("steering_norm_axis"), "", { yaxis: { type: "category", autorange: "reversed", automargin: true } }) }, "steering_norm");
  },
};
