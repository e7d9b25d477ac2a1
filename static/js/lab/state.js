// The lab page's one state object and its form in the URL (the fields shared/page.js reads and writes).
// Only go() (lab/navigate.js) changes it. The page's own fields are here (the panel shown, the model,
// the sentence, the language); every panel declares its own in its module (panels/<name>.js: `fields`),
// and the page composes them: a panel's field `key` is the state's `<name>.<key>`, written so in the URL
// (/lab?panel=<name>&<name>.layer=2). A field's `old` is the short key older links carry (such as hcl=2),
// still read. A field that depends on the model names its largest value for it (`upTo(info)`), and every
// go() keeps it inside the model shown (clampToModel), so a switch to a smaller model never asks for a
// layer or head it does not have.

/** The page's own fields, in the order they are written. */
const PAGE_FIELDS = [
  { key: "panel", field: "panel", kind: "str", initial: "", always: true }, // the panel shown ("": the page's first)
  { key: "model", field: "model", kind: "str", initial: "", always: true },
  { key: "text", field: "text", kind: "str", initial: "我爱北京天安门广场。", always: true },
  { key: "lang", field: "lang", kind: "str", initial: "en", always: true },
  { key: "present", field: "present", kind: "flag", initial: false }, // presentation mode (P): the explorer's, for a projector
];

/** The URL form of the state: the page's fields, then every panel's (addPanelFields), namespaced. */
export const FIELDS = [...PAGE_FIELDS];

// A panel's field declarations: the initial value, the older URL key, and for a field that depends on the
// model its largest value there (upTo: info -> number, from GET /api/models/{model}).
export const int = (initial, old, upTo) => ({ kind: "int", initial, old, upTo });
export const num = (initial, old) => ({ kind: "num", initial, old });
export const str = (initial, old) => ({ kind: "str", initial, old });
export const list = (values, aliases, initial, old) => ({ kind: "list", values, aliases, initial, old });
export const LAYERS = (info) => info.n_layers - 1; // a layer of the model (the encoder's, or the only stack's)
export const HEADS = (info) => info.n_heads - 1; // a head of the model
export const POSITIONS = (info) => info.config.n_ctx - 1; // a position within its context

/** Panel `name`'s fields ({key: declaration}) joined to the page's, as `<name>.<key>`; links that name the panel
 *  by an older name (`aliases`, the experiment's) carry them as `<alias>.<key>`, still read. */
export function addPanelFields(name, fields = {}, aliases = []) {
  for (const [key, spec] of Object.entries(fields)) {
    if (FIELDS.some((f) => f.field === `${name}.${key}`)) continue;
    const old = [spec.old, ...aliases.map((alias) => `${alias}.${key}`)].filter(Boolean);
    FIELDS.push({ ...spec, key: `${name}.${key}`, field: `${name}.${key}`, panel: name, old });
    lab[`${name}.${key}`] = spec.initial;
  }
}

/** Panel `name`'s values in state `s`, by its own keys ({layer: 2}). */
export function own(s, name) {
  const prefix = `${name}.`;
  return Object.fromEntries(FIELDS.filter((f) => f.panel === name).map((f) => [f.key.slice(prefix.length), s[f.field]]));
}

/** Every field that depends on the model, kept within model `info` (in place, on the next state). */
export function clampToModel(s, info) {
  for (const spec of FIELDS) {
    if (spec.upTo && Number.isFinite(s[spec.field])) s[spec.field] = Math.min(s[spec.field], Math.max(0, spec.upTo(info)));
  }
}

/** The field a panel's control names: its panel's `<name>.<key>`. */
export function fieldOf(panel, key) {
  return FIELDS.find((f) => f.field === `${panel}.${key}`);
}

/** A list field's value with `item` switched on or off, in the order of its values. */
export function withItem(spec, value, item, on) {
  const set = new Set(value.split(",").filter(Boolean));
  if (on) set.add(item);
  else set.delete(item);
  return spec.values.filter((x) => set.has(x)).join(",");
}

export const lab = {
  texts: {}, // language -> Texts (static/text/lab.<lang>.json)
  models: [],
  refused: [], // GET /api/health `refused`: models found but not offered, each with why (greyed in the menu)
  loading: [], // GET /api/health `loading`: models still loading, with how far (greyed in the menu, updated)
  info: null, // GET /api/models/{model}
  tokens: [], // the sentence's tokens (POST /api/tokenize)
  data: null, // what the shown panel's load() returned, or {error}, or {refused: family}
  generation: 0, // counts go() calls; only the latest may commit
  ...Object.fromEntries(PAGE_FIELDS.map(({ field, initial }) => [field, initial])),
};
