// Linear attention (φ = elu + 1) on one head's real q, k, v beside the model's softmax: both weight matrices,
// each row's entropy and largest weight, how close the outputs are, and the state against the KV cache
// (the linear_attention experiment); beside the toy, a real gated DeltaNet head (the shipped tiny-deltanet, Qwen3.5's
// shape, trained; or the model on screen when it is a hybrid) on the same text: its state matrix, how much each token
// changed it, and the KV cache it avoids.

import { h, tokenTexts } from "../../shared/dom.js";
import { draw, fitMargins, heatmap, tokenLabels } from "../../shared/plot.js";
import { HEADS, int, LAYERS } from "../state.js";
import { fmt, headBody, headControls, lineLayout } from "../ui.js";

const SOFTMAX = "#1f5fa8";
const LINEAR = "#d9822b";
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const gap = (x) => (x === 0 ? "0" : x.toExponential(1)); // a measured difference: "0", not "0.0e+0"

function notes(data, say, sep) {
  const kind = data.rotated ? "linear_attention_pos_rope" : data.alibi_slope !== null ? "linear_attention_pos_alibi" : "linear_attention_pos_vectors";
  const parts = [say(data.causal ? "linear_attention_mask_causal" : "linear_attention_mask_full"), say(kind, { slope: fmt(data.alibi_slope, 4) })];
  if (data.window !== null) parts.push(say("linear_attention_window", { window: data.window }));
  return parts.join(sep);
}

export default {
  // tiny-gpt's previous-token head: layer 1, head 0
  // the real DeltaNet head: a layer and value head of the hybrid on screen, else of tiny-deltanet (a 422 names the range)
  fields: { layer: int(1, "lal", LAYERS), head: int(0, "lah", HEADS), dn_layer: int(0), dn_head: int(0) },

  load: (ctx) => ctx.ask(headBody(ctx, { dn_layer: ctx.v.dn_layer, dn_head: ctx.v.dn_head })),
  controls: headControls,

  draw(board, data, ctx) {
    const { say } = ctx;
    const sep = ctx.s.texts[ctx.s.lang].separator; // between sentences: " " in English, "" in Chinese
    const rows = tokenLabels(data.query_tokens);
    const cols = tokenLabels(data.key_tokens);
    // the sharpest softmax row among those that see more than one key (a causal row 0 sees only itself: 1 in both)
    const many = data.softmax_max.map((_, i) => i).filter((i) => (data.causal ? i >= 1 : data.key_tokens.length > 1));
    const sharp = (many.length ? many : [0]).reduce((a, i) => (data.softmax_max[i] > data.softmax_max[a] ? i : a));
    const worst = data.cosine.indexOf(Math.min(...data.cosine));
    const mem = data.memory;
    const vars = {
      layer: data.layer, head: data.head, scale: fmt(data.scale, 4), d: data.d_head,
      dz: gap(data.max_diff_z), dp: gap(data.max_diff_pattern), df: gap(data.max_diff_forms),
      h_soft: fmt(mean(data.softmax_entropy), 2), h_lin: fmt(mean(data.linear_entropy), 2),
      m_soft: fmt(mean(data.softmax_max), 2), m_lin: fmt(mean(data.linear_max), 2),
      row: sharp, token: tokenTexts(data.query_tokens)[sharp],
      top_soft: fmt(data.softmax_max[sharp], 2), top_lin: fmt(data.linear_max[sharp], 2),
      cos: fmt(mean(data.cosine), 2), rel: fmt(mean(data.relative_error), 2),
      worst, worst_token: tokenTexts(data.query_tokens)[worst], worst_cos: fmt(data.cosine[worst], 2),
      n: mem.n, state: fmt(mem.state_numbers), kv: fmt(mem.kv_cache_numbers), cross: mem.crossover_length,
    };

    board.block("lin-honest", h("div", {},
      h("h3", { text: say("linear_attention_honest_title") }),
      h("p", { class: "lab-note", text: say("linear_attention_honest") }),
      h("p", { class: "lab-note", text: say("linear_attention_why") })));

    // the two weight matrices on one colour scale (both are weights, 0 to 1), the query tokens named once, left of
    // the softmax map. Every cell at least CELL px (U10 of teaching review 3: 8 px cells on SmolLM2); past
    // SIDE_BY_SIDE keys the maps stack, each the full width, so the columns stay as wide as the rows are tall
    const CELL = 18;
    const SIDE_BY_SIDE = 20;
    const stacked = cols.length > SIDE_BY_SIDE;
    const plot = board.card("lin-weights", { title: say(stacked ? "linear_attention_weights_title_stacked" : "linear_attention_weights_title", vars), note: [say("linear_attention_weights_note", vars), notes(data, say, sep)].join(sep) });
    const soft = heatmap({ z: data.softmax_weights, x: cols, y: rows, signed: false, zmin: 0, zmax: 1, showscale: false, valueLabel: say("weight") });
    const lin = heatmap({ z: data.linear_weights, x: cols, y: rows, signed: false, zmin: 0, zmax: 1, valueLabel: say("weight") });
    lin.colorbar = { ...lin.colorbar, title: { text: say("linear_attention_weight_both"), side: "right" } };
    Object.assign(lin, { xaxis: "x2", yaxis: "y2" });
    const ticks = { size: rows.length > 30 ? 10 : 12 };
    const axes = { type: "category", automargin: true, tickfont: ticks };
    const mapHeight = CELL * rows.length;
    draw(plot, [soft, lin], {
      height: 130 + (stacked ? 2 * mapHeight + 90 : Math.max(300, mapHeight)),
      grid: stacked ? { rows: 2, columns: 1, pattern: "independent", ygap: 0.12 } : { rows: 1, columns: 2, pattern: "independent", xgap: 0.1 },
      margin: { l: 70, r: fitMargins(plot, { colorbar: [0, 1] }).r + 20, t: 30, b: 70 },
      xaxis: { ...axes, title: { text: say("linear_attention_softmax") } }, yaxis: { ...axes, autorange: "reversed" },
      xaxis2: { ...axes, title: { text: say("linear_attention_linear") } }, yaxis2: { ...axes, autorange: "reversed", showticklabels: stacked },
    }, "linear_attention_weights");

    const bars = (soft, lin) => [
      { type: "bar", x: rows, y: soft, name: say("linear_attention_softmax"), marker: { color: SOFTMAX } },
      { type: "bar", x: rows, y: lin, name: say("linear_attention_linear"), marker: { color: LINEAR } },
    ];
    const category = { xaxis: { type: "category", tickfont: { size: 10 } } };
    draw(board.card("lin-entropy", { title: say("linear_attention_entropy_title"), className: "half", note: say("linear_attention_entropy_note", vars) }),
      bars(data.softmax_entropy, data.linear_entropy),
      { ...lineLayout(say("linear_attention_query"), say("linear_attention_entropy"), { ...category, yaxis: { rangemode: "tozero" } }), barmode: "group" }, "linear_attention_entropy");
    draw(board.card("lin-max", { title: say("linear_attention_max_title"), className: "half", note: say("linear_attention_max_note", vars) }),
      bars(data.softmax_max, data.linear_max),
      { ...lineLayout(say("linear_attention_query"), say("linear_attention_max"), { ...category, yaxis: { range: [0, 1.05] } }), barmode: "group" }, "linear_attention_max");

    // the cosine (at most 1; below 0 only when measured so) and the relative error (0 … tens) on their own axes, each coloured as its line: on one
    // axis the error flattened the cosine (U10)
    draw(board.card("lin-outputs", { title: say("linear_attention_outputs_title"), className: "half", note: say("linear_attention_outputs_note", vars) }), [
      { type: "scatter", mode: "lines+markers", x: rows, y: data.cosine, name: say("linear_attention_cosine"), marker: { color: SOFTMAX }, line: { color: SOFTMAX } },
      { type: "scatter", mode: "lines+markers", x: rows, y: data.relative_error, name: say("linear_attention_relative"), marker: { color: LINEAR }, line: { color: LINEAR, dash: "dot" }, yaxis: "y2" },
    ], {
      ...lineLayout(say("linear_attention_query"), say("linear_attention_cosine"), { ...category, yaxis: { range: [Math.min(0, ...data.cosine) - 0.05, 1.05], color: SOFTMAX } }),
      yaxis2: { title: { text: say("linear_attention_relative") }, overlaying: "y", side: "right", range: [0, 1.08 * Math.max(1, ...data.relative_error)], tickmode: "auto", nticks: 6, color: LINEAR, showgrid: false, automargin: true },
    }, "linear_attention_outputs");

    draw(board.card("lin-memory", { title: say("linear_attention_memory_title"), className: "half", note: [say("linear_attention_memory_note", vars), data.causal ? "" : say("linear_attention_memory_encoder")].filter(Boolean).join(sep) }), [
      { type: "scatter", mode: "lines", x: mem.lengths, y: mem.lengths.map(() => mem.state_numbers), name: say("linear_attention_state"), line: { color: LINEAR } },
      { type: "scatter", mode: "lines", x: mem.lengths, y: mem.kv_cache_curve, name: say("linear_attention_cache"), line: { color: SOFTMAX } },
      { type: "scatter", mode: "markers", x: [mem.n, mem.n], y: [mem.state_numbers, mem.kv_cache_numbers], name: say("linear_attention_here", vars),
        marker: { color: "#1b2330", size: 9, symbol: "diamond" } },
    ], lineLayout(say("linear_attention_length"), say("linear_attention_numbers"), { xaxis: { rangemode: "tozero" }, yaxis: { rangemode: "tozero" } }), "linear_attention_memory");
    drawRealHead(board, data.deltanet, say, sep);
  },
};

/** The real gated DeltaNet head beside the toy: S after the last token, and per token how much S changed (with
 * the share kept, exp(g), the write strength β and, on its own axis, the size of the read-out ‖S_t q_t‖). */
function drawRealHead(board, dn, say, sep) {
  const last = dn.change.length - 1;
  const vars = {
    model: dn.model, layer: dn.layer, head: dn.head, key_head: dn.key_head, d_value: dn.d_value, d_key: dn.d_key,
    state: fmt(dn.state_numbers), layer_state: fmt(dn.layer_state_numbers), n: dn.tokens.length, half: dn.half_tokens,
    half_shape: dn.half_state_shape.join(" × "), attn: dn.attention_layer ?? "–", per_token: fmt(dn.kv_per_token),
    kv: fmt(dn.kv_numbers), cross: dn.crossover ?? "–", change: fmt(100 * dn.change[last], 1),
  };
  board.block("lin-dn", h("div", {},
    h("h3", { text: say("linear_attention_dn_title", vars) }),
    h("p", { class: "lab-note", text: say("linear_attention_dn_lead", vars) })));
  const dims = (n) => Array.from({ length: n }, (_, i) => String(i));
  const map = heatmap({ z: dn.state, x: dims(dn.d_key), y: dims(dn.d_value), valueLabel: "S" });
  draw(board.card("lin-dn-state", { title: say("linear_attention_dn_state_title", vars), className: "half", note: say("linear_attention_dn_state_note", vars) }), [map],
    lineLayout(say("linear_attention_dn_key_dim"), say("linear_attention_dn_value_dim"), { xaxis: { type: "category" }, yaxis: { type: "category", autorange: "reversed" } }), "linear_attention_dn_state");
  const x = tokenLabels(dn.tokens);
  const line = (y, key, color, dash) => ({ type: "scatter", mode: "lines+markers", x, y, name: say(key), marker: { color }, line: { color, dash } });
  draw(board.card("lin-dn-change", { title: say("linear_attention_dn_change_title", vars), className: "half", note: [say("linear_attention_dn_change_note", vars), say("linear_attention_dn_memory", vars)].join(sep) }), [
    line(dn.change, "linear_attention_dn_change", LINEAR),
    line(dn.kept, "linear_attention_dn_kept", SOFTMAX, "dot"),
    line(dn.beta, "linear_attention_dn_beta", "#2e8540", "dash"),
    { ...line(dn.read_norm, "linear_attention_dn_read", "#7a3e9d", "dashdot"), yaxis: "y2" }, // ‖S_t q_t‖: what the head reads out
  ], {
    ...lineLayout(say("linear_attention_dn_token"), say("linear_attention_dn_share"), { xaxis: { type: "category", tickfont: { size: 10 } }, yaxis: { rangemode: "tozero" } }),
    yaxis2: { title: { text: say("linear_attention_dn_read") }, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false, automargin: true, color: "#7a3e9d" },
  }, "linear_attention_dn_change");
}
