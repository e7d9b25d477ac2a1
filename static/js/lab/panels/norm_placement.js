// Pre-LN against Post-LN: gradient norms per layer at init and the first training steps (the norm_placement experiment).

import { draw } from "../../shared/plot.js";
import { int } from "../state.js";
import { fmt, lineLayout, numberField, selectField } from "../ui.js";

export default {
  // the two models it trains (not the model on the page)
  fields: { layers: int(12, "nl"), width: int(64, "nd"), steps: int(8, "ns"), seed: int(0, "nseed") },

  load: ({ v, ask }) => ask({ n_layers: v.layers, d_model: v.width, n_heads: 4, steps: v.steps, seed: v.seed }),

  controls({ v, say }) {
    const widths = [32, 64, 128].map((n) => [n, String(n)]);
    return [
      numberField("layers", v.layers, say("norm_placement_layers"), { min: 1, max: 24 }),
      selectField("width", widths, v.width, "d_model", "int"),
      numberField("steps", v.steps, say("norm_placement_steps"), { min: 0, max: 100 }),
      numberField("seed", v.seed, say("seed"), { min: 0, max: 99999 }),
    ];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const layers = data.pre.ffn_out_grad_norms.map((_, i) => i);
    const end = (run) => (run.losses.length ? fmt(run.losses[run.losses.length - 1], 3) : "–");
    const growth = (run) => (run.growth === null ? "–" : fmt(run.growth, 2));
    const vars = {
      post: growth(data.post), pre: growth(data.pre), steps: data.settings.steps, lr: data.settings.lr, seed: data.settings.seed,
      post_loss: end(data.post), pre_loss: end(data.pre), source: say(data.source.startsWith("the shared") ? "norm_placement_corpus" : "norm_placement_builtin"),
      post_where: data.post.growth !== null && data.post.growth > 1 ? say("norm_placement_post_grows") : say("norm_placement_post_not"),
      pre_where: data.pre.growth !== null && data.pre.growth < 1 ? say("norm_placement_pre_input") : say("norm_placement_pre_output"),
    };
    draw(board.card("nl-grads", { title: say("norm_placement_grads_title"), className: "half", note: say("norm_placement_grads_note", vars) }), [
      { x: layers, y: data.post.ffn_out_grad_norms, mode: "lines+markers", name: "Post-LN" },
      { x: layers, y: data.pre.ffn_out_grad_norms, mode: "lines+markers", name: "Pre-LN" },
    ], lineLayout(say("norm_placement_layer"), say("norm_placement_grad"), { yaxis: { type: "log" } }), "norm_placement_grads");
    const steps = data.pre.losses.map((_, i) => i + 1);
    draw(board.card("nl-loss", { title: say("norm_placement_loss_title"), className: "half", note: say(steps.length ? "norm_placement_loss_note" : "norm_placement_no_steps", vars) }), [
      { x: steps, y: data.post.losses, mode: "lines", name: "Post-LN" },
      { x: steps, y: data.pre.losses, mode: "lines", name: "Pre-LN" },
    ], lineLayout(say("norm_placement_step"), say("norm_placement_loss")), "norm_placement_loss");
  },
};
