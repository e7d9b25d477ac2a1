// The one intervention builder and loader, for the explorer's toggles and the lab's: each kind has one name,
// the one POST /api/trace's `interventions` uses (shuffle; the explorer used to say reverse), one request
// shape, and both runs are asked the same way. shared/interventions_view.js draws them.

import { api, decodeStages } from "./api.js";

export const KINDS = ["no_scale", "no_mask", "window", "temperature", "ablate", "shuffle"];

/** Older names a link may carry (?iv=reverse) -> the kind. */
export const ALIASES = { reverse: "shuffle" };

/** The source tokens reversed; zero-width specials ([CLS], [SEP], a start token) keep their places. */
export function reversedOrder(tokens) {
  const special = tokens.map((tk) => tk.start === tk.end);
  const words = tokens.map((_, i) => i).filter((i) => !special[i]);
  const back = [...words].reverse();
  return tokens.map((_, i) => (special[i] ? i : back[words.indexOf(i)]));
}

/**
 * The request's `interventions` for the kinds in `on` (null: none on). `p`: window (W), temperature
 * (T), layer and head (the head ablate switches off; stack: "encoder"/"decoder" to name one stack's), tokens
 * (the sentence's, which shuffle reverses).
 */
export function interventionsOf(on, p) {
  const out = {};
  for (const kind of KINDS.filter((k) => on.includes(k))) {
    if (kind === "no_scale") out.no_scale = true;
    else if (kind === "no_mask") out.no_mask = true;
    else if (kind === "window") out.window = p.window;
    else if (kind === "temperature") out.temperature = p.temperature;
    else if (kind === "ablate") {
      out.ablate_heads = [[p.layer, p.head]];
      if (p.stack) out.ablate_stack = p.stack;  // encoder-decoder: only that stack's head
    }
    else if (kind === "shuffle") out.shuffle = reversedOrder(p.tokens);
  }
  return Object.keys(out).length ? out : null;
}

/** Next tokens each run asks for: the view's tables show the first 8, its bars read the other run's among these. */
export const NEXT_ASKED = 20;

/**
 * The original run and the changed one of stage `name` (POST /api/trace twice; `body`: model, text, target):
 * {name, changes, probs, runs: [{answer, tensor, hidden}] × 2}. Attention weights come with `mask`, the scores
 * after the mask (shared/stage_names.js maskOf): its −∞ cells are the hidden ones, drawn grey in each run (hidden),
 * and their values are probabilities (probs). Without `changes` the original is asked once and shown twice.
 */
export async function loadBothRuns(body, name, changes, mask = null) {
  const asked = { ...body, stages: mask ? [name, mask] : [name], top_k: NEXT_ASKED };
  const [original, changed] = await Promise.all([api.trace(asked), changes ? api.trace({ ...asked, interventions: changes }) : null]);
  return {
    name,
    changes,
    probs: Boolean(mask),
    runs: [original, changed || original].map((answer) => {
      const stages = decodeStages(answer);
      return { answer, tensor: stages[name], hidden: mask ? stages[mask] : null };
    }),
  };
}
