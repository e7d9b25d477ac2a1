// O(n²): time and peak memory of naive against tiled attention, on log axes (the complexity experiment).

import { draw } from "../../shared/plot.js";
import { int } from "../state.js";
import { fmt, lineLayout, selectField } from "../ui.js";

export function lengthsUpTo(max) {
  const out = [];
  for (let n = 64; n <= Math.min(max, 4096); n *= 2) out.push(n);
  return out.length ? out : [64];
}

function mib(bytes) {
  return bytes / 2 ** 20;
}

export default {
  fields: { longest: int(2048, "cxn"), heads: int(1, "cxh") },

  load: ({ v, ask }) => ask({ lengths: lengthsUpTo(v.longest), d_model: 64 * v.heads, n_heads: v.heads }),

  controls({ v, say }) {
    const maxes = [512, 1024, 2048, 4096].map((n) => [n, String(n)]);
    return [
      selectField("longest", maxes, v.longest, say("complexity_max"), "int"),
      selectField("heads", [1, 2, 4, 8].map((n) => [n, String(n)]), v.heads, say("complexity_heads"), "int"),
    ];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const done = data.measurements.filter((m) => m.naive_seconds !== null);
    const skipped = data.measurements.filter((m) => m.naive_seconds === null).map((m) => m.n);
    const x = done.map((m) => m.n);
    const last = done[done.length - 1] || { n: 0 };
    const scale = last.naive_seconds ? last.naive_seconds / last.n ** 2 : 0;
    const vars = {
      device: data.device, b_naive: data.naive_fit ? fmt(data.naive_fit.exponent, 2) : "–",
      b_tiled: data.tiled_fit ? fmt(data.tiled_fit.exponent, 2) : "–", r2: data.naive_fit ? fmt(data.naive_fit.r_squared, 3) : "–",
      skipped: skipped.length ? skipped.join(", ") : "–", budget: data.budget_seconds, block: data.block,
      n: last.n, naive_mib: fmt(mib(last.naive_peak_bytes || 0), 1), tiled_mib: fmt(mib(last.tiled_peak_bytes || 0), 2),
      source: say(data.memory_source === "counted" ? "complexity_counted" : "complexity_allocator"),
    };
    const log = { type: "log" };
    draw(board.card("cx-time", { title: say("complexity_time_title"), className: "half", note: say("complexity_time_note", vars) }), [
      { x, y: done.map((m) => m.naive_seconds), mode: "lines+markers", name: say("complexity_naive") },
      { x, y: done.map((m) => m.tiled_seconds), mode: "lines+markers", name: say("complexity_tiled") },
      { x, y: x.map((n) => scale * n * n), mode: "lines", name: say("complexity_n2"), line: { dash: "dot" } },
    ], lineLayout(say("complexity_length"), say("complexity_seconds"), { xaxis: log, yaxis: log }), "complexity_time");
    draw(board.card("cx-memory", { title: say("complexity_memory_title"), className: "half", note: say("complexity_memory_note", vars) }), [
      { x, y: done.map((m) => mib(m.naive_peak_bytes)), mode: "lines+markers", name: say("complexity_naive") },
      { x, y: done.map((m) => mib(m.tiled_peak_bytes)), mode: "lines+markers", name: say("complexity_tiled") },
    ], lineLayout(say("complexity_length"), "MiB", { xaxis: log, yaxis: log }), "complexity_memory");
  },
};
