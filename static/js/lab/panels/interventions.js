// Change one thing and see why: the original run beside the intervened one (POST /api/trace twice):
// the pattern, the next-token table and the loss of the sentence.

import { api, decodeStages } from "../../shared/api.js";
import { draw, heatmap, safe, tokenLabels } from "../../shared/plot.js";
import { h, visible } from "../../shared/dom.js";
import { interventionsOf, KINDS, sentenceStack } from "../../shared/interventions.js";
import { toggled, toggledOn } from "../state.js";
import { fmt, lineLayout, numberField, range, selectField, toggle } from "../ui.js";

/** The layer shown: the state's, or the last one (-1). */
export function shownLayer(s, info) {
  return s.layer < 0 || s.layer >= info.n_layers ? info.n_layers - 1 : s.layer;
}

/** The request's `interventions` for the toggles that are on (null: none). */
function changesOf(s, tokens) {
  return interventionsOf(toggledOn(s), { window: s.ivWindow, temperature: s.ivTemperature, layer: s.ablateLayer, head: s.head, tokens });
}

export default {
  async load(s, info) {
    const layer = shownLayer(s, info);
    const base = { model: s.model, text: s.text, stages: [`${sentenceStack(info)}blocks.${layer}.attn.hook_pattern`], top_k: 8 };
    const changes = changesOf(s, s.tokens);
    const [original, changed] = await Promise.all([api.trace(base), changes ? api.trace({ ...base, interventions: changes }) : null]);
    return { layer, original, changed: changed || original, changes, name: base.stages[0] };
  },

  controls(s, say, info) {
    return [
      ...KINDS.map((name) => toggle(name, toggled(s, name), say(`iv_${name}`))),
      numberField("ivWindow", s.ivWindow, say("iv_window_w"), { min: 1, max: 64 }),
      numberField("ivTemperature", s.ivTemperature, say("iv_temperature_t"), { min: 0.05, max: 100, step: 0.5, kind: "num" }),
      selectField("ablateLayer", range(info.n_layers), s.ablateLayer, say("iv_ablate_layer"), "int"),
      selectField("layer", range(info.n_layers), shownLayer(s, info), say("layer"), "int"),
      selectField("head", range(info.n_heads), s.head, say("head"), "int"),
    ];
  },

  draw(board, data, c) {
    const { say, s } = c;
    const runs = [["original", data.original], ["intervened", data.changed]];
    for (const [which, answer] of runs) {
      const pattern = decodeStages(answer)[data.name];
      const labels = tokenLabels(answer.tokens);
      const z = pattern.matrix("q_pos", "k_pos", { head: Math.min(s.head, c.info.n_heads - 1) });
      draw(board.card(`iv-${which}`, { title: say(`iv_${which}_title`, { layer: data.layer, head: s.head }), className: "half" }),
        [heatmap({ z, x: labels, y: labels, signed: false, zmin: 0, zmax: 1, annotate: false, valueLabel: say("weight") })],
        { height: 360, xaxis: { type: "category", tickfont: { size: 10 } }, yaxis: { type: "category", autorange: "reversed", tickfont: { size: 10 } } }, `iv_${which}`);
    }
    const before = data.original.top_tokens;
    if (!before) {
      board.block("iv-loss", h("p", { class: "lab-note", text: say("iv_no_logits") }));
      return;
    }
    const after = data.changed.top_tokens;
    const ids = [...new Set([...before.map((r) => r.id), ...after.map((r) => r.id)])];
    const text = new Map([...before, ...after].map((r) => [r.id, r.text]));
    const prob = (rows, id) => (rows.find((r) => r.id === id) || { prob: 0 }).prob;
    const labels = ids.map((id) => safe(visible(text.get(id))));
    draw(board.card("iv-next", { title: say("iv_next_title"), className: "half" }),
      [{ type: "bar", x: labels, y: ids.map((id) => prob(before, id)), name: say("iv_original") },
        { type: "bar", x: labels, y: ids.map((id) => prob(after, id)), name: say("iv_intervened") }],
      { ...lineLayout("", say("probability"), { xaxis: { type: "category" } }), barmode: "group" }, "iv_next");
    const l0 = data.original.loss;
    const l1 = data.changed.loss;
    const delta = l0 !== null && l1 !== null && l0 !== undefined && l1 !== undefined ? l1 - l0 : null;
    const on = data.changes ? Object.keys(data.changes).join(", ") : say("iv_none");
    board.block("iv-loss", h("div", {},
      h("h3", { text: say("iv_loss_title") }),
      h("p", { class: "iv-loss", text: say("iv_loss", { before: fmt(l0, 3), after: fmt(l1, 3), delta: delta === null ? "–" : `${delta >= 0 ? "+" : ""}${fmt(delta, 3)}`, on }) })), "half");
  },
};
