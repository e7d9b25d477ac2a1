// The page loop both pages run. Each page has one state object; only go(patch) changes it: go
// builds the next state, loads what it shows, and only then commits it, draws it and writes its
// URL. If anything fails, a message appears and the last good view stays on screen.
// A state's URL form is a list of fields (state.js, lab/state.js), so a link reproduces the view.

import { hideMessage, showError } from "./messages.js";

/**
 * A URL field: {key, field, kind, initial, values?, aliases?, min?, always?, when?(s), get?(s), old?}.
 * kind: "int" (≥ min), "num" (finite; > above), "str", "flag" (written "1"), "choice" (one of values;
 * aliases: older names), "list" (comma-separated values). A value is written when it differs from
 * `initial`, or `always` (null and undefined never); `when(s)`: only then; `get(s)`: the value to write;
 * `old`: the key older links carry (or a list of them), read when `key` is absent (never written).
 */
function parse(spec, raw) {
  const named = (x) => (spec.aliases && Object.hasOwn(spec.aliases, x) ? spec.aliases[x] : x);
  switch (spec.kind) {
    case "int":
      return /^-?\d+$/.test(raw) && Number(raw) >= (spec.min ?? -Infinity) ? Number(raw) : undefined;
    case "num":
      return raw !== "" && Number.isFinite(Number(raw)) && Number(raw) > (spec.above ?? -Infinity) ? Number(raw) : undefined;
    case "flag":
      return raw === "1";
    case "choice":
      return spec.values.includes(named(raw)) ? named(raw) : undefined;
    case "list":
      return raw.split(",").map(named).filter((x) => spec.values.includes(x)).join(",");
    default:
      return raw;
  }
}

/** The fields a URL sets ({field: value}); missing and malformed ones are left out. */
export function readURL(fields, search = location.search) {
  const p = new URLSearchParams(search);
  const out = {};
  for (const spec of fields) {
    const key = [spec.key, ...[spec.old ?? []].flat()].find((k) => p.has(k));
    const value = key ? parse(spec, p.get(key)) : undefined;
    if (value !== undefined) out[spec.field] = value;
  }
  return out;
}

/** Every field at its initial value ({field: initial}). */
export function initialFields(fields) {
  return Object.fromEntries(fields.map((spec) => [spec.field, spec.initial]));
}

/** The URL (path and query) of state `s`. */
export function urlOf(fields, s) {
  const p = new URLSearchParams();
  for (const spec of fields) {
    const value = spec.get ? spec.get(s) : s[spec.field];
    if (value === undefined || value === null || (spec.when && !spec.when(s))) continue;
    if (!spec.always && value === spec.initial) continue;
    p.set(spec.key, spec.kind === "flag" ? "1" : String(value));
  }
  return `${location.pathname}?${p}`;
}

/** Put `url` in the address bar without a new history entry: the class pages keep a code there, never a key. */
export function replaceAddress(url) {
  history.replaceState(null, "", url);
}

export function setBusy(busy) {
  document.body.classList.toggle("busy", busy);
}

/**
 * The loop: returns go(patch). `state`: the page's one state object (with `generation`); `fields`:
 * its URL form. Hooks: begin(patch) -> {next, patch} (default: the state with the patch applied);
 * prepare(next, patch): loads into `next` what it shows and returns what draw needs; draw(loaded,
 * patch): draws the committed state; fail(error, next): the Texts to say the error in (after
 * drawing what it can); push(before, after): a new history entry instead of replacing this one.
 */
export function pageLoop({ state, fields, begin, prepare, draw, fail, push }) {
  return async function go(request) {
    const mine = ++state.generation;
    const { next, patch } = begin ? begin(request) : { next: { ...state, ...request }, patch: request };
    setBusy(true);
    const t0 = performance.now(); // go:load / go:render: where a step's time goes (bench/page_speed.py --phases)
    try {
      const loaded = await prepare(next, patch);
      if (mine !== state.generation) return;
      const t1 = performance.now();
      const before = { ...state };
      Object.assign(state, next);
      hideMessage();
      draw(loaded, patch);
      performance.measure(`go:load:${mine}`, { start: t0, end: t1 });
      performance.measure(`go:render:${mine}`, { start: t1, end: performance.now() });
      const url = urlOf(fields, state);
      if (push && push(before, state)) history.pushState(null, "", url);
      else history.replaceState(null, "", url);
    } catch (error) {
      if (mine !== state.generation) return;
      showError(error, fail(error, next));
      console.warn("view not changed:", error); // eslint-disable-line no-console
    } finally {
      if (mine === state.generation) setBusy(false);
    }
  };
}
