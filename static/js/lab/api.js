// The lab's requests: /api/lab/* and the explorer's own endpoints, through the explorer's cached fetch.

import { cached } from "../api.js";

export const labApi = {
  scaling: (body) => cached("POST", "/api/lab/scaling", body),
  masks: (body) => cached("POST", "/api/lab/masks", body),
  positions: (body) => cached("POST", "/api/lab/positions", body),
  parameters: (body) => cached("POST", "/api/lab/parameters", body),
  sampling: (body) => cached("POST", "/api/lab/sampling", body),
  complexity: (body) => cached("POST", "/api/lab/complexity", body),
  flash: (body) => cached("POST", "/api/lab/flash", body),
  kvCache: (query) => cached("GET", `/api/lab/kv-cache?${new URLSearchParams(query)}`),
  generate: (body) => cached("POST", "/api/lab/generate", body),
  normPlacement: (body) => cached("POST", "/api/lab/norm-placement", body),
  logitLens: (body) => cached("POST", "/api/lab/logit-lens", body),
  ablation: (body) => cached("POST", "/api/lab/ablation", body),
};

/** The stack prefix of the self-attention that reads the sentence ("encoder." for encoder-decoders). */
export function selfPrefix(info) {
  return info.architecture === "encoder-decoder" ? "encoder." : "";
}

/** The body fields that pick the model and the text (with the translator's start for the decoder). */
export function textBody(s) {
  return { model: s.model, text: s.text };
}
