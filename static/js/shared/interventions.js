// The one intervention builder, for the explorer's toggles and the lab's: each kind has one name,
// the one POST /api/trace's `interventions` uses (shuffle; the explorer used to say reverse), and one
// request shape.

import { sentenceStackName, stackPrefix } from "./stage_names.js";

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

/** The stack prefix of the self-attention that reads the sentence ("encoder." for encoder-decoders). */
export function sentenceStack(info) {
  return stackPrefix(sentenceStackName(info));
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
