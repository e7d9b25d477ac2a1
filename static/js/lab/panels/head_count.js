// More heads are not always better: one layer's real q and k, cut again into h heads of d_k = width / h;
// each head's score-table rank against its bound min(n, d_k), and the row entropy (the head_count experiment).

import { draw } from "../../shared/plot.js";
import { h } from "../../shared/dom.js";
import { int, LAYERS } from "../state.js";
import { fmt, lineLayout, range, selectField } from "../ui.js";

export default {
  fields: { layer: int(0, "hcl", LAYERS) },

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, layer: v.layer }),

  controls({ v, say, info }) {
    return [selectField("layer", range(info.n_layers), v.layer, say("layer"), "int")];
  },

  vars(data) {
    const n = Math.min(data.query_tokens.length, data.key_tokens.length);
    const splits = data.splits;
    const own = splits.find((x) => x.heads === data.model_heads);
    const first = splits.find((x) => x.d_k < n); // the fewest heads whose width is under the sentence's length
    return {
      n, width: data.width, layer: data.layer, heads: data.model_heads, d_k: data.model_d_head, kv: data.kv_heads,
      own_rank: own ? fmt(own.mean_rank, 1) : "–", own_bound: own ? own.bound : "–",
      first_h: first ? first.heads : "–", first_dk: first ? first.d_k : "–",
      narrow_h: splits[splits.length - 1].heads, rtol: data.rtol.toExponential(0), diff: data.own_split_diff.toExponential(1),
      uniform: fmt(data.uniform_entropy, 2), own_entropy: own ? fmt(own.entropy, 2) : "–",
      narrow_entropy: fmt(splits[splits.length - 1].entropy, 2),
    };
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const sep = ctx.s.texts[ctx.s.lang].separator; // between sentences: " " in English, "" in Chinese
    const vars = this.vars(data);
    const splits = data.splits;
    const x = splits.map((s) => `${s.heads}<br>${s.d_k}`); // a category per split: its h over its d_k
    const ownAt = splits.findIndex((s) => s.heads === data.model_heads);
    const own = {
      type: "line", xref: "x", yref: "paper", x0: ownAt, x1: ownAt, y0: 0, y1: 1, line: { dash: "dot", width: 2, color: "#888" },
    };
    // the model's own split, named low beside its line, clear of the legend above the plot
    const ownLabel = { xref: "x", yref: "paper", x: ownAt, y: 0.03, xanchor: "left", yanchor: "bottom", xshift: 4, showarrow: false, text: say("head_count_own", vars), font: { size: 11 }, bgcolor: "rgba(255,255,255,0.8)" };
    // a half-width chart has room for about 14 two-line labels, kept upright; with more splits (a width with
    // many divisors, such as 576) the ends, the model's own split and the first one the bound limits are named,
    // and others as room allows
    const step = Math.ceil(x.length / 14);
    const picked = [...new Set([ownAt, splits.findIndex((s) => s.d_k < vars.n), 0, x.length - 1].filter((i) => i >= 0))];
    for (let i = 0; i < x.length; i++) if (picked.every((j) => Math.abs(i - j) >= step)) picked.push(i);
    const ticks = x.filter((_, i) => picked.includes(i));
    const xaxis = { type: "category", tickfont: { size: 10 }, tickangle: 0, tickmode: "array", tickvals: ticks, ticktext: ticks };
    const axes = (yTitle) => {
      const layout = lineLayout(say("head_count_axis"), yTitle, { xaxis, yaxis: { rangemode: "tozero" } });
      return { ...layout, height: 340, margin: { ...layout.margin, r: 20, b: 80 }, shapes: [own], annotations: [ownLabel] };
    };
    const fits = vars.first_h === "–" ? "head_count_short" : data.model_d_head >= vars.n ? "head_count_short_own" : "head_count_bites";
    const gqa = data.kv_heads < data.model_heads ? say("head_count_gqa", vars) : "";
    const rankNote = [say(fits, vars), say("head_count_rank_note", vars), gqa].filter(Boolean).join(sep);
    draw(board.card("hc-rank", { title: say("head_count_rank_title", vars), className: "half", note: rankNote }), [
      // the bound as a wide pale band: the measured ranks lie on it wherever they reach it
      { x, y: splits.map((s) => s.bound), mode: "lines", name: say("head_count_bound"), line: { width: 9, color: "rgba(120, 120, 120, 0.35)" } },
      { x, y: splits.map((s) => s.mean_rank), mode: "lines+markers", name: say("head_count_mean_rank") },
      { x, y: splits.map((s) => s.min_rank), mode: "markers", name: say("head_count_min_rank"), marker: { symbol: "triangle-down", size: 9 } },
    ], axes(say("head_count_rank")), "head_count_rank");
    draw(board.card("hc-entropy", { title: say("head_count_entropy_title"), className: "half", note: say("head_count_entropy_note", vars) }), [
      { x, y: splits.map((s) => s.entropy), mode: "lines+markers", name: say("head_count_entropy") },
      { x, y: splits.map(() => data.uniform_entropy), mode: "lines", name: say("head_count_uniform"), line: { dash: "dash" } },
    ], axes(say("head_count_nats")), "head_count_entropy");
    const rows = [
      ...data.published.map((p) => [p.name, p.d_model, p.n_heads, p.d_head, say("head_count_published")]),
      [data.model, data.width, data.model_heads, data.model_d_head, say("head_count_this_model", vars)],
    ];
    const head = h("tr", {}, ["head_count_col_model", "head_count_col_width", "head_count_col_heads", "head_count_col_dk", "head_count_col_source"].map((k) => h("th", { text: say(k) })));
    const body = rows.map((r) => h("tr", {}, r.map((v) => h("td", { text: String(v) }))));
    board.block("hc-table", h("div", {},
      h("table", { class: "kv-table hc-table" }, h("caption", { text: say("head_count_table_caption") }), h("thead", {}, head), h("tbody", {}, body)),
      h("p", { class: "lab-note", text: say(data.rotated ? "head_count_honest_rope" : "head_count_honest",
        // only GQA copies K/V heads to the query heads they serve; with MHA each head has its own
        { ...vars, heads_clause: say(data.kv_heads < data.model_heads ? "head_count_clause_gqa" : "head_count_clause_mha", vars) }) }),
      ...(data.alibi ? [h("p", { class: "lab-note", text: say("head_count_alibi") })] : []),
    ));
  },
};
