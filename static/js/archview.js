// The architectures view (?sheet=arch): the same sentence through an encoder-only, a decoder-only and
// an encoder-decoder model, side by side, with live traces: each one's self-attention pattern and mask
// for one layer and head, where the translator's cross-attention reads from (its source tokens), and
// each training objective. A kind with no model loaded (minilm is optional) says so in its column.

import { api, decodeStages } from "./shared/api.js";
import { categoryAxis, draw, heatmap, rowsHeight, tokenLabels } from "./shared/plot.js";
import { h } from "./shared/dom.js";
import { attentionStage } from "./shared/stage_names.js";
import { modelFor } from "./lessons.js";

export const ARCHS = ["encoder", "decoder", "encoder-decoder"];

/** One column: its model, the sentence it ran (the translator's target is its own greedy output), two charts. */
async function loadOne(s, arch) {
  const name = modelFor(s.models, arch);
  if (!name) return { arch, missing: true };
  try {
    const info = await api.model(name);
    const layer = Math.min(s.layer, info.n_layers - 1);
    const head = Math.min(s.head, info.n_heads - 1);
    const body = { model: name, text: s.text };
    let given = false;
    if (arch === "encoder-decoder") {
      // the decoder needs something to write: the target on screen, or the model's own output for this source
      let target = s.model === name ? s.target : "";
      given = Boolean(target);
      if (!target) {
        const answer = await api.predict({ model: name, text: s.text, top_k: 1, sample_top_k: 1, temperature: 1, seed: 0, max_new_tokens: 12 });
        target = (answer.generated && answer.generated.text) || "";
      }
      body.target_text = target;
    }
    const stack = arch === "encoder-decoder" ? "decoder" : null;
    const self = attentionStage(info, "pattern", layer, { stack });
    const cross = attentionStage(info, "pattern", layer, { stack: "decoder", cross: true });
    const mask = attentionStage(info, "attn_scores", layer, { stack });
    const stages = arch === "encoder-decoder" ? [self, mask, cross] : [self, mask];
    const answer = await api.trace({ ...body, stages, heads: [head], top_k: arch === "encoder" ? 0 : 3 });
    const decoded = decodeStages(answer);
    return { arch, name, info, layer, head, answer, target: body.target_text ?? "", given, self: decoded[self], mask: decoded[mask], cross: arch === "encoder-decoder" ? decoded[cross] : null };
  } catch (error) {
    return { arch, name, error: String(error && error.message ? error.message : error) };
  }
}

/** What the architectures view shows for state `s` (a failure stays in its own column). */
export async function loadArch(s) {
  return Promise.all(ARCHS.map((arch) => loadOne(s, arch)));
}

/** The pattern of the one head asked for, with the cells its mask hides (scores −∞) in grey. */
function chart(el, tensor, scores, qToks, kToks, t, filename) {
  const z = tensor.matrix("q_pos", "k_pos", { head: 0 });
  const small = z.length <= 12 && (z[0] || []).length <= 12;
  const x = tokenLabels(kToks);
  const y = tokenLabels(qToks);
  const traces = [heatmap({ z, x, y, signed: false, zmin: 0, zmax: 1, annotate: small, valueLabel: t("hover_weight"), showscale: false })];
  const hidden = scores ? scores.matrix("q_pos", "k_pos", { head: 0 }).map((row) => row.map((v) => (v === null ? 1 : null))) : [];
  if (hidden.some((row) => row.some((v) => v !== null))) {
    traces.push({ type: "heatmap", z: hidden, x, y, colorscale: [[0, "#b8bec8"], [1, "#b8bec8"]], showscale: false, hoverongaps: false, hovertemplate: `%{y}<br>%{x}<br>${t("hover_masked")}<extra></extra>` });
  }
  draw(el, traces, { height: rowsHeight(z.length, small ? 34 : 20, 240), xaxis: categoryAxis(t("ax_key"), { tickangle: -45 }), yaxis: categoryAxis(t("ax_query"), { autorange: "reversed" }) }, filename);
}

/** Append the three columns to `root` (already in the page) and draw their charts. */
export function drawArch(root, data, t) {
  if (!data) return;
  const cols = h("div", { class: "arch-live" });
  root.append(h("h4", { text: t("arch_live_title") }), cols);
  const pending = [];
  for (const one of data) {
    const parts = [h("h4", { text: `${t(`arch_kind_${one.arch}`)}${one.name ? ` · ${one.name}` : ""}` })];
    if (one.missing) parts.push(h("p", { class: "arch-missing", text: t(`arch_missing_${one.arch}`) }));
    else if (one.error) parts.push(h("p", { class: "arch-missing", text: t("arch_failed", { name: one.name, error: one.error }) }));
    else {
      const encdec = one.arch === "encoder-decoder";
      const qToks = encdec ? one.answer.target_tokens || [] : one.answer.tokens;
      const selfPlot = h("div", { class: "plot", "data-chart": "self" });
      parts.push(
        h("p", { class: "arch-caption", text: t(`arch_self_${one.arch}`, { layer: one.layer, head: one.head, target: one.target, whence: t(one.given ? "arch_target_given" : "arch_target_generated") }) }),
        selfPlot,
      );
      pending.push(() => chart(selfPlot, one.self, one.mask, qToks, qToks, t, `${one.name}_arch_self`));
      if (encdec) {
        const crossPlot = h("div", { class: "plot", "data-chart": "cross" });
        parts.push(h("p", { class: "arch-caption", text: t("arch_cross_live", { layer: one.layer, head: one.head, n: one.answer.tokens.length }) }), crossPlot);
        pending.push(() => chart(crossPlot, one.cross, null, qToks, one.answer.tokens, t, `${one.name}_arch_cross`));
      }
      parts.push(h("p", { class: "arch-objective" }, h("strong", { text: t("arch_objective_label") }), t(`arch_objective_${one.arch}`)));
      const top = one.answer.top_tokens || [];
      if (top.length && typeof one.answer.loss === "number") {
        parts.push(h("p", { class: "arch-loss", text: t(`arch_loss_${one.arch}`, { loss: one.answer.loss.toFixed(3), top: top.map((p) => JSON.stringify(p.text)).join(", ") }) }));
      }
    }
    cols.append(h("section", { class: "arch-col", "data-arch": one.arch, "data-model": one.name || "" }, parts));
  }
  for (const run of pending) run();
}
