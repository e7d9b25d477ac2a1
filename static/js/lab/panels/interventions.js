// Change one thing and see why: the original run beside the changed one (POST /api/trace twice), drawn by
// the view the explorer shares (shared/interventions_view.js): one layer and head's pattern in both runs,
// the next tokens and the loss of the sentence. Here several changes may be on at once.

import { ALIASES, interventionsOf, KINDS, loadBothRuns } from "../../shared/interventions.js";
import { attentionStage, maskOf, sentenceStackName } from "../../shared/stage_names.js";
import { drawBothRuns, runMatrix } from "../../shared/interventions_view.js";
import { HEADS, int, LAYERS, list, num } from "../state.js";
import { numberField, range, selectField, toggle } from "../ui.js";

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
    const name = attentionStage(info, "pattern", layer, { stack: sentenceStackName(info) });
    return { layer, ...(await loadBothRuns({ model: s.model, text: s.text }, name, changesOf(v, s.tokens), maskOf(info, name))) };
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

  draw(board, data, ctx) {
    const { say, v } = ctx;
    // the changes on, in the words the explorer's toggles use (window W = 2, layer 0, head 1 ablated)
    const words = { w: v.window, temp: v.temperature, layer: v.ablate_layer, head: v.head };
    const kinds = on(v);
    const what = kinds.length ? kinds.map((kind) => say(`interventions_what_${kind}`, words)).join(say("interventions_list_sep")) : say("interventions_none");
    const where = say("interventions_where", { layer: data.layer, head: v.head });
    const runs = data.runs.map((run) => ({ answer: run.answer, ...runMatrix(run.tensor, run.answer.tokens, v.head, run.hidden) }));
    drawBothRuns(board, { name: data.name, changes: data.changes, probs: data.probs, runs, what, where }, say, { separator: ctx.s.texts[ctx.s.lang].separator });
  },
};
