// Talking to the API, for both pages: one fetch wrapper, a cache keyed by request, and typed-array
// decoding. The browser never recomputes the model; it only asks for the stages it is about to show.
// In a recorded site (shared/site.js) the same requests are answered by the recorded response bodies.

import { SITE } from "./site.js";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const cache = new Map(); // request key -> Promise of the decoded JSON
const CACHE_LIMIT = 200;
// A server with a full queue answers 503 + Retry-After. When a whole class presses Enter at once, the
// page waits that long (plus up to half again, so the class does not come back at once) and asks again,
// twice, before it shows "busy".
const RETRIES_WHEN_BUSY = 2;
const LONGEST_WAIT_S = 5;

function busyWait(response) {
  const after = Number(response.headers.get("Retry-After"));
  const seconds = Math.min(LONGEST_WAIT_S, after > 0 ? after : 1);
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000 * (1 + 0.5 * Math.random())));
}

/** A request's key: the cache's, and the recorded site's index of answers (static_site/record.py). */
export function requestKey(method, url, body) {
  return `${method} ${url} ${body ? JSON.stringify(body) : ""}`;
}

/** The recorded answer to a request, parsed from the server's exact response text; one not recorded needs the server. */
async function recordedAnswer(method, url, body) {
  const text = await SITE.load(requestKey(method, url, body));
  if (text === undefined) throw new ApiError(0, "needs_server", "not recorded in this site");
  return JSON.parse(text);
}

/** In a recorded site: whether it holds the answer to this request (on the live server: always false). */
export function isRecorded(method, url, body) {
  return Boolean(SITE && SITE.has(requestKey(method, url, body)));
}

export async function request(method, url, body, attempt = 0) {
  if (SITE) return recordedAnswer(method, url, body);
  let response;
  try {
    response = await fetch(url, {
      method,
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    throw new ApiError(0, "network", String(err && err.message ? err.message : err));
  }
  if (response.status === 503 && attempt < RETRIES_WHEN_BUSY) {
    await busyWait(response);
    return request(method, url, body, attempt + 1);
  }
  let payload = null;
  try {
    payload = await response.json();
  } catch (err) {
    payload = null;
  }
  if (!response.ok) {
    const error = (payload && payload.error) || {};
    const failure = new ApiError(response.status, error.code || `http_${response.status}`, error.message || response.statusText);
    if (typeof error.percent === "number") failure.percent = error.percent; // model_loading: how far the load is
    if (error.details && typeof error.details === "object") failure.details = error.details; // reason + values
    throw failure;
  }
  return payload;
}

/** GET/POST with a cache: the same request is fetched once (failures are not kept). */
/** One request as it is, uncached and without retries, answered as its Response: the class pages' (a key header,
 *  the class's cookies, a 204) — every fetch of the pages is made in this module. */
export function send(method, url, body, headers = {}) {
  return fetch(url, {
    method, credentials: "same-origin",
    headers: body === undefined ? headers : { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export function cached(method, url, body) {
  const key = requestKey(method, url, body);
  if (cache.has(key)) return cache.get(key);
  const promise = request(method, url, body);
  cache.set(key, promise);
  promise.catch(() => cache.delete(key));
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value);
  return promise;
}

export const api = {
  models: () => cached("GET", "/api/models"),
  /** The models found but refused, {name, source, reason}: asked after models() (which loads the lazy ones, so a
   *  first load that failed is among them); a server that cannot say leaves the menu without them. */
  refused: () => cached("GET", "/api/health").then((health) => (Array.isArray(health.refused) ? health.refused : []), () => []),
  /** The models loading now, {name, done, total, percent} (shared/loading_models.js asks again until none is). */
  loading: () => cached("GET", "/api/health").then((health) => (Array.isArray(health.loading) ? health.loading : []), () => []),
  model: (name) => cached("GET", `/api/models/${encodeURIComponent(name)}`),
  modelStages: (choice) => cached("POST", "/api/stages", choice), // a from-scratch config's stages, described
  tokenize: (body) => cached("POST", "/api/tokenize", body),
  trace: (body) => cached("POST", "/api/trace", { encoding: "base64", dtype: "float16", ...body }),
  predict: (body) => cached("POST", "/api/predict", body),
  positional: (params) => cached("GET", `/api/positional-encoding?${new URLSearchParams(params)}`),
  /** What a lesson chapter asks the class to look at, measured on its view (app/answers/lesson_claims.py), or on
   *  `view`, the one on screen ({text, target, model, layer, head}: the claims its chart draws, measured again). */
  lessonClaims: (chapter, lang, view = null) => {
    const asked = Object.entries(view || {}).filter(([, v]) => v !== null && v !== undefined && v !== "");
    const query = new URLSearchParams([["lang", lang], ...asked.map(([k, v]) => [k, String(v)])]);
    return cached("GET", `/api/lessons/${encodeURIComponent(chapter)}/claims?${query}`);
  },
  /** What a lesson chapter asks the class to predict, answered on its view or on `view`, the one on screen
   *  (app/answers/lesson_questions.py): each question's options, right answer, tolerance and one-line why. */
  lessonQuestions: (chapter, lang, view = null) => {
    const asked = Object.entries(view || {}).filter(([, v]) => v !== null && v !== undefined && v !== "");
    const query = new URLSearchParams([["lang", lang], ...asked.map(([k, v]) => [k, String(v)])]);
    return cached("GET", `/api/lessons/${encodeURIComponent(chapter)}/questions?${query}`);
  },
  /** A chapter's share card: its link on this server in `lang`, and that link as a QR code (app/answers/lesson_share.py). */
  lessonShare: (chapter, lang) => cached("GET", `/api/lessons/${encodeURIComponent(chapter)}/share?lang=${encodeURIComponent(lang)}`),
  positionalKinds: () => cached("GET", "/api/positional-encoding/kinds"), // the server's one registry of kinds
  /** One lab experiment at the path the server gave the page: POST `body`, or GET with `body` as the query. */
  lab: (path, method, body) => (method === "GET" ? cached("GET", `${path}?${new URLSearchParams(body)}`) : cached("POST", path, body)),
  cacheSize: () => cache.size,
};

// ------------------------------------------------------------------ tensors

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function decodeData(data) {
  if (Array.isArray(data)) {
    const flat = data.flat(Infinity);
    return Float32Array.from(flat, (v) => (v === null ? NaN : v));
  }
  const bytes = Uint8Array.from(atob(data.bdata), (c) => c.charCodeAt(0));
  const buffer = bytes.buffer;
  switch (data.dtype) {
    case "f4":
      return new Float32Array(buffer);
    case "f2":
      if (typeof Float16Array !== "undefined") return Float32Array.from(new Float16Array(buffer));
      return Float32Array.from(new Uint16Array(buffer), halfToFloat);
    case "i4":
      return Float32Array.from(new Int32Array(buffer));
    case "f8":
      return Float32Array.from(new Float64Array(buffer));
    default:
      throw new ApiError(0, "bad_dtype", `unknown dtype ${data.dtype}`);
  }
}

/** A decoded tensor: named dims, shape and a flat Float32Array (masked cells are NaN). */
export class Tensor {
  constructor(payload) {
    this.name = payload.name;
    this.dims = payload.dims;
    this.shape = payload.shape;
    this.nonfinite = payload.nonfinite || 0; // NaN/Inf cells no mask put there (an overflow), counted by the server
    this.values = decodeData(payload.data);
    this.strides = [];
    let stride = 1;
    for (let i = this.shape.length - 1; i >= 0; i -= 1) {
      this.strides[i] = stride;
      stride *= this.shape[i];
    }
  }

  size(dim) {
    const index = this.dims.indexOf(dim);
    return index < 0 ? 1 : this.shape[index];
  }

  has(dim) {
    return this.dims.includes(dim);
  }

  /** A 2-D slice: rows along `rowDim`, columns along `colDim`, other dims fixed by `fixed`. */
  matrix(rowDim, colDim, fixed = {}) {
    const rowAxis = this.dims.indexOf(rowDim);
    const colAxis = this.dims.indexOf(colDim);
    let base = 0;
    this.dims.forEach((dim, axis) => {
      if (axis !== rowAxis && axis !== colAxis) base += (fixed[dim] || 0) * this.strides[axis];
    });
    const rows = rowAxis < 0 ? 1 : this.shape[rowAxis];
    const cols = colAxis < 0 ? 1 : this.shape[colAxis];
    const rs = rowAxis < 0 ? 0 : this.strides[rowAxis];
    const cs = colAxis < 0 ? 0 : this.strides[colAxis];
    const out = new Array(rows);
    for (let r = 0; r < rows; r += 1) {
      const row = new Array(cols);
      for (let c = 0; c < cols; c += 1) {
        const v = this.values[base + r * rs + c * cs];
        row[c] = Number.isFinite(v) ? v : null;
      }
      out[r] = row;
    }
    return out;
  }

  /** A 1-D slice along `dim`, other dims fixed. */
  vector(dim, fixed = {}) {
    return this.matrix(dim, "__none__", fixed).map((row) => row[0]);
  }
}

/** Decode the `stages` of a /api/trace answer into Tensor objects. */
const decoded = new WeakMap(); // answer object -> its decoded tensors (decode once)

export function decodeStages(answer) {
  if (decoded.has(answer)) return decoded.get(answer);
  const out = {};
  for (const [name, payload] of Object.entries(answer.stages || {})) out[name] = new Tensor(payload);
  decoded.set(answer, out);
  return out;
}
