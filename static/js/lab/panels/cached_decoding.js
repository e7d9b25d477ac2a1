// Decoding with a KV cache: the cache grows one position per step, and the scores it saves (the cached_decoding experiment).

import { draw } from "../../shared/plot.js";
import { h, readText, tokenText, visible } from "../../shared/dom.js";
import { int } from "../state.js";
import { lineLayout, numberField } from "../ui.js";

export default {
  fields: { steps: int(12, "gn") },

  load: ({ s, v, ask }) => ask({ model: s.model, text: s.text, max_new_tokens: v.steps }),

  controls({ v, say }) {
    return [numberField("steps", v.steps, say("cached_decoding_steps"), { min: 1, max: 64 })];
  },

  draw(board, data, ctx) {
    const { say } = ctx;
    const steps = data.steps;
    const x = steps.map((st) => st.step + 1);
    const last = steps[steps.length - 1];
    const vars = {
      n: steps.length, prompt: data.tokens.length, text: visible(readText(data.text)), bytes: last ? last.cache_bytes.toLocaleString("en-US") : 0,
      per: last ? (last.cache_bytes / last.cache_positions).toLocaleString("en-US") : 0, layers: data.layers, kv: data.kv_heads, d_head: data.d_head, value: data.bytes_per_value, dtype: data.dtype,
      saved: (100 * data.saved_fraction).toFixed(1), cached: last ? last.cached_cells.toLocaleString("en-US") : 0,
      recomputed: last ? last.recomputed_cells.toLocaleString("en-US") : 0,
      diff: Math.max(0, ...steps.map((st) => st.max_diff)).toExponential(1),
    };
    const hybrid = Boolean(data.deltanet_layers); // Qwen3.5: DeltaNet layers cache a fixed state, not K and V
    if (hybrid && last) {
      const rows = steps.map((st, i) => st.cached_cells - (i ? steps[i - 1].cached_cells : 0)); // scores each step
      Object.assign(vars, {
        per: ((last.cache_bytes - data.state_bytes) / last.cache_positions).toLocaleString("en-US"),
        state: data.state_bytes.toLocaleString("en-US"), deltanet: data.deltanet_layers, value_heads: data.value_heads,
        d_key: data.d_key, d_value: data.d_value, per_token: data.state_cells_per_token.toLocaleString("en-US"),
        state_cached: last.state_cells.toLocaleString("en-US"), state_recomputed: last.recomputed_state_cells.toLocaleString("en-US"),
        first_row: rows.length > 1 ? rows[1].toLocaleString("en-US") : "–", last_row: rows[rows.length - 1].toLocaleString("en-US"),
      });
    }
    draw(board.card("gen-bytes", { title: say("cached_decoding_bytes_title"), className: "half", note: say(hybrid ? "cached_decoding_bytes_note_hybrid" : "cached_decoding_bytes_note", vars) }), [
      { x, y: steps.map((st) => st.cache_bytes), mode: "lines+markers", name: say("cached_decoding_measured") },
      { x, y: steps.map((st) => st.formula_bytes), mode: "lines", name: say("cached_decoding_formula"), line: { dash: "dot" } },
    ], lineLayout(say("cached_decoding_step"), say("cached_decoding_bytes")), "generate_bytes");
    draw(board.card("gen-cells", { title: say("cached_decoding_cells_title"), className: "half", note: say("cached_decoding_cells_note", vars) }), [
      { x, y: steps.map((st) => st.cached_cells), mode: "lines+markers", name: say("cached_decoding_with_cache") },
      { x, y: steps.map((st) => st.recomputed_cells), mode: "lines+markers", name: say("cached_decoding_without_cache") },
    ], lineLayout(say("cached_decoding_step"), say("cached_decoding_cells")), "generate_cells");
    if (hybrid) {
      draw(board.card("gen-state", { title: say("cached_decoding_state_title", vars), className: "half", note: say("cached_decoding_state_note", vars) }), [
        { x, y: steps.map((st) => st.state_cells), mode: "lines+markers", name: say("cached_decoding_with_cache") },
        { x, y: steps.map((st) => st.recomputed_state_cells), mode: "lines+markers", name: say("cached_decoding_without_cache") },
      ], lineLayout(say("cached_decoding_step"), say("cached_decoding_state_cells")), "generate_state_cells");
    }
    const chips = steps.map((st) => h("li", { class: "chip" }, h("span", { class: "chip-text", text: tokenText(st) }), h("span", { class: "chip-id", text: `${st.fed}→${st.cache_positions}` })));
    board.block("gen-tokens", h("div", {}, h("h3", { text: say("cached_decoding_tokens_title", vars) }), h("ul", { class: "chips" }, chips), h("p", { class: "lab-note", text: say("cached_decoding_tokens_note", vars) })));
  },
};
