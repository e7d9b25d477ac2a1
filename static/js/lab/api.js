// The lab's requests: /api/lab/* and the explorer's own endpoints, through the explorer's cached fetch.

import { cached } from "../api.js";

export const labApi = {
  scaling: (body) => cached("POST", "/api/lab/scaling", body),
  masks: (body) => cached("POST", "/api/lab/masks", body),
  positions: (body) => cached("POST", "/api/lab/positions", body),
  parameters: (body) => cached("POST", "/api/lab/parameters", body),
  sampling: (body) => cached("POST", "/api/lab/sampling", body),
};

/** The stack prefix of the self-attention that reads the sentence ("encoder." for encoder-decoders). */
export function selfPrefix(info) {
  return info.architecture === "encoder-decoder" ? "encoder." : "";
}

/** The body fields that pick the model and the text (with the translator's start for the decoder). */
export function textBody(s) {
  return { model: s.model, text: s.text };
}
