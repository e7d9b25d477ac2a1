// Change one thing and see why: the original run beside the intervened one (POST /api/trace twice):
// the pattern, the next-token table and the loss of the sentence.

import { api, decodeStages } from "../../shared/api.js";
import { draw, heatmap, safe, tokenLabels } from "../../shared/plot.js";
import { h, visible } from "../../shared/dom.js";
import { ALIASES, interventionsOf, KINDS, sentenceStack } from "../../shared/interventions.js";
import { HEADS, int, LAYERS, list, num } from "../state.js";
import { fmt, lineLayout, numberField, range, selectField, toggle } from "../ui.js";

/** The layer shown: the panel's, or the last one (-1). */
function shownLayer(v, info) {
  return v.layer < 0 ? info.n_layers - 1 : v.layer;
}

/** The interventions switched on, as a list of kinds. */
function on(v) {
  return v.toggles.split(",").filter(Boolean);
}

/** The request's `interventions` for the toggles that are on (null: none); `head` is also the one ablated. */
function changesOf(v, tokens) {
  return interventionsOf(on(v), { window: v.window, temperature: v.temperature, layer: v.ablate_layer, head: v.head, tokens });
}

export default {
  fields: {
    toggles: list(KINDS, ALIASES, "", "iv"), // the interventions on, comma-separated
    window: int(2, "ivw"),
    temperature: num(3, "ivt"),
    layer: int(-1, "ivl", LAYERS), // the layer shown (-1: the last)
    head: int(0, "ivh", HEADS),
    ablate_layer: int(0, "abl", LAYERS),
  },

  async load({ s, info, v }) {
    const layer = shownLayer(v, info);
    const base = { model: s.model, text: s.text, stages: [`${sentenceStack(info)}blocks.${layer}.attn.hook_pattern`], top_k: 8 };
    const changes = changesOf(v, s.tokens);
    const [original, changed] = await Promise.all([api.trace(base), changes ? api.trace({ ...base, interventions: changes }) : null]);
    return { layer, original, changed: changed || original, changes, name: base.stages[0] };
  },

  controls({ v, say, info }) {
    return [
      ...KINDS.map((name) => toggle("toggles", name, on(v).includes(name), say(`interventions_${name}`))),
      numberField("window", v.window, say("interventions_window_w"), { min: 1, max: 64 }),
      numberField("temperature", v.temperature, say("interventions_temperature_t"), { min: 0.05, max: 100, step: 0.5, kind: "num" }),
      selectField("ablate_layer", range(info.n_layers), v.ablate_layer, say("interventions_ablate_layer"), "int"),
      selectField("layer", range(info.n_layers), shownLayer(v, info), say("layer"), "int"),
      selectField("head", range(info.n_heads), v.head, say("head"), "int"),
    ];
  },

  draw(board, data, c) {
    const { say, v } = c;
    const runs = [["original", data.original], ["intervened", data.changed]];
    for (const [which, answer] of runs) {
      const pattern = decodeStages(answer)[data.name];
      const labels = tokenLabels(answer.tokens);
      const z = pattern.matrix("q_pos", "k_pos", { head: v.head });
      draw(board.card(`iv-${which}`, { title: say(`interventions_${which}_title`, { layer: data.layer, head: v.head }), className: "half" }),
        [heatmap({ z, x: labels, y: labels, signed: false, zmin: 0, zmax: 1, annotate: false, valueLabel: say("weight") })],
        { height: 360, xaxis: { type: "category", tickfont: { size: 10 } }, yaxis: { type: "category", autorange: "reversed", tickfont: { size: 10 } } }, `iv_${which}`);
    }
    const before = data.original.top_tokens;
    if (!before) {
      board.block("iv-loss", h("p", { class: "lab-note", text: say("interventions_no_logits") }));
      return;
    }
    const after = data.changed.top_tokens;
    const ids = [...new Set([...before.map((r) => r.id), ...after.map((r) => r.id)])];
    const text = new Map([...before, ...after].map((r) => [r.id, r.text]));
    const prob = (rows, id) => (rows.find((r) => r.id === id) || { prob: 0 }).prob;
    const labels = ids.map((id) => safe(visible(text.get(id))));
    draw(board.card("iv-next", { title: say("interventions_next_title"), className: "half" }),
      [{ type: "bar", x: labels, y: ids.map((id) => prob(before, id)), name: say("interventions_original") },
        { type: "bar", x: labels, y: ids.map((id) => prob(after, id)), name: say("interventions_intervened") }],
      { ...lineLayout("", say("probability"), { xaxis: { type: "category" } }), barmode: "group" }, "iv_next");
    const l0 = data.original.loss;
    const l1 = data.changed.loss;
    const delta = l0 !== null && l1 !== null && l0 !== undefined && l1 !== undefined ? l1 - l0 : null;
    const on = data.changes ? Object.keys(data.changes).join(", ") : say("interventions_none");
    board.block("iv-loss", h("div", {},
      h("h3", { text: say("interventions_loss_title") }),
      h("p", { class: "iv-loss", text: say("interventions_loss", { before: fmt(l0, 3), after: fmt(l1, 3), delta: delta === null ? "–" : `${delta >= 0 ? "+" : ""}${fmt(delta, 3)}`, on }) })), "half");
  },
};
