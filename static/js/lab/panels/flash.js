// FlashAttention step by step: the tiles, and the running max m and sum l after each (the flash experiment).

import { draw, heatmap, tokenLabels } from "../../shared/plot.js";
import { HEADS, int, LAYERS, str } from "../state.js";
import { headBody, headControls, lineLayout, numberField, selectField } from "../ui.js";

export default {
  // tile: the step shown, from 0 (draw keeps it within the tiles of the sentence)
  fields: { layer: int(0, "fl", LAYERS), head: int(0, "fh", HEADS), block_q: int(4, "fbq"), block_k: int(4, "fbk"), tile: int(0, "ft"), dtype: str("float32") },

  load: (ctx) => ctx.ask(headBody(ctx, { block_q: ctx.v.block_q, block_k: ctx.v.block_k, dtype: ctx.v.dtype })),

  controls({ v, say, info }) {
    const blocks = [1, 2, 3, 4, 8, 16, 32, 64, 128].map((n) => [n, String(n)]);
    const dtypes = ["float32", "float16", "bfloat16"].map((d) => [d, d]);
    return [
      ...headControls({ v, say, info }),
      selectField("block_q", blocks, v.block_q, say("flash_block_q"), "int"),
      selectField("block_k", blocks, v.block_k, say("flash_block_k"), "int"),
      numberField("tile", v.tile, say("flash_tile"), { min: 0, max: 100000 }),
      selectField("dtype", dtypes, v.dtype, say("flash_dtype")),
    ];
  },

  draw(board, data, ctx) {
    const { say, v } = ctx;
    const n = data.tiles.length;
    const index = Math.max(0, Math.min(v.tile, n - 1));
    const tile = data.tiles[index];
    const nq = data.query_tokens.length;
    const nk = data.key_tokens.length;
    // each cell's state (a colour, not a number): 0 never computed (masked), 1 done, 2 this tile, 0.4 still to come
    const STATES = { 0: say("flash_st_never"), 0.4: say("flash_st_todo"), 1: say("flash_st_done"), 2: say("flash_st_now") };
    const z = Array.from({ length: nq }, () => Array(nk).fill(0));
    data.tiles.forEach((t, i) => {
      for (let q = t.q_range[0]; q < t.q_range[1]; q++) for (let k = t.k_range[0]; k < t.k_range[1]; k++) z[q][k] = i < index ? 1 : i === index ? 2 : 0.4;
    });
    const vars = {
      step: index + 1, n, qi: tile.q_block, ki: tile.k_block, q_tiles: data.q_tiles, k_tiles: data.k_tiles,
      skipped: data.skipped_tiles, largest: data.largest_bytes.toLocaleString("en-US"), n2: data.n_squared_bytes.toLocaleString("en-US"),
      nq, nk, cross: data.crossover_length, d_head: data.d_head, block_q: data.block_q, block_k: data.block_k,
      diff: data.max_diff_z.toExponential(1), naive: data.max_diff_naive.toExponential(1),
    };
    const grid = heatmap({ z, x: tokenLabels(data.key_tokens), y: tokenLabels(data.query_tokens), signed: false, zmin: 0, zmax: 2, showscale: false,
      annotate: false, customdata: z.map((row) => row.map((v) => STATES[v])), hovertemplate: "%{y}<br>%{x}<br>%{customdata}<extra></extra>" });
    draw(board.card("fl-grid", { title: say("flash_grid_title", vars), className: "half", note: say("flash_grid_note", vars) }), [grid],
      { xaxis: { title: { text: say("flash_keys") }, type: "category", automargin: true }, yaxis: { title: { text: say("flash_queries") }, type: "category", autorange: "reversed", automargin: true }, height: 340, margin: { l: 80, r: 20, t: 30, b: 70 } }, "flash_tiles");
    const rows = Array.from({ length: tile.q_range[1] - tile.q_range[0] }, (_, i) => String(tile.q_range[0] + i));
    draw(board.card("fl-state", { title: say("flash_state_title", vars), className: "half", note: say("flash_state_note", vars) }), [
      { type: "bar", x: rows, y: tile.m.map((v) => (v === null ? 0 : v)), name: say("flash_m") },
      { type: "bar", x: rows, y: tile.l, name: say("flash_l") },
    ], { ...lineLayout(say("flash_query_row"), say("flash_value"), { xaxis: { type: "category" } }), barmode: "group" }, "flash_state");
    this.traffic(board, data, ctx);
  },

  // bytes moved to and from main memory: the formulas over N, and what this sentence's loop counted
  traffic(board, data, { say }) {
    const n = data.query_tokens.length;
    const last = data.traffic_lengths.length - 1;
    const bytes = (x) => x.toLocaleString("en-US");
    const tvars = {
      d_head: data.d_head, block_q: data.block_q, dtype: data.dtype, size: data.bytes_per_number, n,
      loop_read: bytes(data.loop_read_bytes), loop_written: bytes(data.loop_written_bytes),
      formula_read: bytes(data.formula_read_bytes), formula_written: bytes(data.formula_written_bytes),
      standard: bytes(data.standard_read_bytes + data.standard_written_bytes),
      long_n: data.traffic_lengths[last], long_ratio: (data.standard_bytes[last] / data.flash_bytes[last]).toFixed(2),
      big: data.traffic_block_q, big_ratio: (data.standard_bytes[last] / data.flash_large_block_bytes[last]).toFixed(2),
    };
    const mib = (xs) => xs.map((x) => x / 2 ** 20);
    draw(board.card("fl-traffic", { title: say("flash_traffic_title", tvars), note: say("flash_traffic_note", tvars) }), [
      { x: data.traffic_lengths, y: mib(data.standard_bytes), mode: "lines+markers", name: say("flash_traffic_standard") },
      { x: data.traffic_lengths, y: mib(data.flash_bytes), mode: "lines+markers", name: say("flash_traffic_flash", tvars) },
      { x: data.traffic_lengths, y: mib(data.flash_large_block_bytes), mode: "lines+markers", name: say("flash_traffic_flash_big", tvars) },
      { x: [n], y: mib([data.loop_read_bytes + data.loop_written_bytes]), mode: "markers", marker: { size: 12, symbol: "diamond" }, name: say("flash_traffic_counted") },
    ], lineLayout(say("flash_traffic_n"), say("flash_traffic_mib"), {
      // a tick at each N drawn (this sentence's first), so no bare "2" or "5" stands for 20 or 50
      xaxis: { type: "log", tickvals: data.traffic_lengths, ticktext: data.traffic_lengths.map(bytes) },
      yaxis: { type: "log" },
    }), "flash_traffic");
  },
};
