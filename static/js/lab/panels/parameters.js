// Where the parameters are: per component, h heads against one head, MHA/GQA/MQA, the FFN's share
// (the parameters experiment).

import { draw } from "../../shared/plot.js";
import { h } from "../../shared/dom.js";
import { fmt, lineLayout } from "../ui.js";

const PARTS = ["embedding", "positional", "attention", "mlp", "norms", "unembedding"];

export default {
  fields: {},
  load: ({ s, ask }) => ask({ model: s.model }),
  controls: () => [],

  vars(data) {
    const splits = data.head_splits;
    const mine = splits.find((r) => r.n_heads === data.config.n_heads) || splits[splits.length - 1];
    return {
      total: fmt(data.counts.total), state: fmt(data.state_dict_total), share: fmt(100 * data.ffn_share, 1),
      share_blocks: fmt(100 * data.ffn_share_of_blocks, 1), d_model: data.config.d_model, h: mine.n_heads,
      d_head: mine.d_head, one: fmt(splits[0].total), many: fmt(mine.total),
      kv: data.own_attention.n_kv_heads, kind: data.own_attention.kind, real: fmt(data.own_attention.total),
      own_width: data.own_attention.d_head, width: data.config.n_heads * data.own_attention.d_head,
    };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const vars = this.vars(data);
    const parts = PARTS.filter((p) => data.counts[p] > 0);
    board.block("param-summary", h("p", { class: "lab-note", text: say("parameters_summary", vars) }));
    draw(board.card("param-parts", { title: say("parameters_parts_title", vars), className: "third" }),
      [{ type: "bar", x: parts.map((p) => say(`parameters_part_${p}`)), y: parts.map((p) => data.counts[p]), text: parts.map((p) => fmt(data.counts[p])), textposition: "auto" }],
      lineLayout("", say("parameters_axis")), "parameters_parts");
    const splits = data.head_splits;
    draw(board.card("param-heads", { title: say("parameters_heads_title"), className: "third", note: say("parameters_heads_note", vars) + (vars.width !== vars.d_model ? say("parameters_heads_own_width", vars) : "") }),
      [{ type: "bar", x: splits.map((r) => `${r.n_heads}×${r.d_head}`), y: splits.map((r) => r.total), text: splits.map((r) => fmt(r.total)), textposition: "auto" }],
      lineLayout(say("parameters_heads_x_width"), say("parameters_attention_params")), "parameters_heads");
    const kv = data.kv_sharing;
    draw(board.card("param-kv", { title: say("parameters_kv_title"), className: "third", note: say("parameters_kv_note") }),
      [{ type: "bar", x: kv.map((r) => `${r.kind} (${r.n_kv_heads})`), y: kv.map((r) => r.kv), name: "W_K + W_V", text: kv.map((r) => fmt(r.kv)), textposition: "auto" },
        { type: "bar", x: kv.map((r) => `${r.kind} (${r.n_kv_heads})`), y: kv.map((r) => r.W_Q + r.W_O), name: "W_Q + W_O" }],
      { ...lineLayout(say("parameters_kv_heads"), say("parameters_attention_params")), barmode: "stack" }, "parameters_kv");
  },
};
