// KV cache bytes: published shapes and every model here under MHA, GQA and MQA (the kv_cache_size experiment).

import { draw } from "../../shared/plot.js";
import { h } from "../../shared/dom.js";
import { int, str } from "../state.js";
import { lineLayout, numberField, selectField } from "../ui.js";

const GIB = 2 ** 30;

export function bytesText(bytes) {
  if (bytes >= GIB) return `${(bytes / GIB).toFixed(2)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(2)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

/** Two published models' caches at the same positions and batch, and how many times the first is the second. */
export function gqaSaving(mha, gqa, positions, batch) {
  const ratio = mha.bytes_per_token / gqa.bytes_per_token;
  return {
    l2: bytesText(mha.bytes_per_token * positions * batch), l3: bytesText(gqa.bytes_per_token * positions * batch),
    ratio: Number.isInteger(ratio) ? String(ratio) : ratio.toFixed(2),
  };
}

export default {
  fields: { context: int(4096, "kvc"), batch: int(1, "kvb"), dtype: str("float16", "kvd") },

  load: ({ v, ask }) => ask({ context: v.context, batch: v.batch, dtype: v.dtype }),

  controls({ v, say }) {
    const dtypes = ["float32", "float16", "bfloat16", "int8", "fp8"].map((d) => [d, d]);
    return [
      numberField("context", v.context, say("kv_cache_size_context"), { min: 1, max: 1048576 }),
      numberField("batch", v.batch, say("kv_cache_size_batch"), { min: 1, max: 1024 }),
      selectField("dtype", dtypes, v.dtype, say("kv_cache_size_dtype")),
    ];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const pub = data.published;
    const byName = Object.fromEntries(pub.map((r) => [r.name, r]));
    const l2 = byName["Llama-2-7B"];
    const l3 = byName["Llama-3-8B"];
    // GQA's saving alone: both at the same positions (the shorter of the two contexts held), not each at its own
    const pos = Math.min(l2.cached_positions, l3.cached_positions);
    const vars = { context: data.context, batch: data.batch, dtype: data.dtype, bytes: data.bytes_per_value, formula: say("kv_cache_size_formula"),
      ...gqaSaving(l2, l3, pos, data.batch), pos,
      gpt3: bytesText(byName["GPT-3 175B"].total_bytes), mistral: byName["Mistral-7B"].cached_positions };
    draw(board.card("kv-published", { title: say("kv_cache_size_pub_title", vars), className: "half", note: say("kv_cache_size_pub_note", vars) }), [
      { type: "bar", x: pub.map((r) => `${r.name} (${r.attention})`), y: pub.map((r) => r.total_bytes / GIB), name: "GiB",
        text: pub.map((r) => bytesText(r.total_bytes)), textposition: "outside", hovertext: pub.map((r) => `${r.layers}×${r.kv_heads}×${r.d_head}`),
      textfont: { size: 12 }, cliponaxis: false }],
    // powers of ten only: the minor ticks of a log axis (2, 5, …) read as unexplained numbers
    { ...lineLayout("", say("kv_cache_size_axis_gib"), { xaxis: { type: "category" }, yaxis: { type: "log", dtick: 1, exponentformat: "none" } }),
      uniformtext: { minsize: 10, mode: "show" } }, "kv_published"); // bar labels stay readable on narrow bars
    const kinds = ["MHA", "GQA", "MQA"];
    const traces = kinds.map((kind) => ({
      type: "bar", name: kind, x: data.models.map((m) => m.model),
      y: data.models.map((m) => { const row = m.variants.find((v) => v.attention === kind); return row ? row.total_bytes / 2 ** 20 : null; }),
    }));
    // local and global layers (Gemma): the local ones keep only their window, said beside the model's name
    const localNote = (m) => {
      const row = m.decodes && m.variants.find((v) => v.attention === m.own);
      return row && row.local_layers ? say("kv_cache_size_local_item", { local: row.local_layers, layers: row.layers, kept: row.local_positions, all: row.cached_positions }) : "";
    };
    const own = data.models.map((m) => say("kv_cache_size_own_item", { model: m.model, kind: m.decodes ? m.own : say("kv_cache_size_no_decode") }) + localNote(m)).join(" · ");  // an encoder: no bars
    draw(board.card("kv-models", { title: say("kv_cache_size_models_title"), className: "half", note: say("kv_cache_size_models_note", { own }) }), traces,
      { ...lineLayout("", say("kv_cache_size_axis_mib"), { xaxis: { type: "category" }, yaxis: { type: "log", dtick: 1, exponentformat: "none" } }), barmode: "group" }, "kv_models");
    const head = h("tr", {}, ["name", "attention", "layers", "q_heads", "kv_heads", "d_head", "cached_positions", "bytes_per_token", "total_bytes"].map((k) => h("th", { text: say(`kv_cache_size_col_${k}`) })));
    const body = pub.map((r) => h("tr", {}, [r.name, r.attention, r.layers, r.q_heads, r.kv_heads, r.d_head, r.cached_positions, bytesText(r.bytes_per_token), bytesText(r.total_bytes)].map((v) => h("td", { text: String(v) }))));
    board.block("kv-table", h("div", {}, h("table", { class: "kv-table" }, h("thead", {}, head), h("tbody", {}, body))));
  },
};
