// Text lookup. Every word the page shows lives in static/text/<lang>.json (one file per
// language, edited by translators); this module only finds a key and fills its {placeholders}.
// It keeps no language of its own: the language is state.lang, and one Texts object is made
// per loaded language file.

import { stageKeys, STAGE_FIELDS } from "./stage_text.js";
import { PANEL_OF } from "./stages.js";

export const LANGS = ["en", "zh"];

/** Fetch one language's text file from this origin. */
export async function loadTexts(lang) {
  const response = await fetch(`/static/text/${encodeURIComponent(lang)}.json`);
  if (!response.ok) throw new Error(`text file for "${lang}": HTTP ${response.status}`);
  return new Texts(await response.json());
}

/** A problem in the text data: reported on the console (the browser tests fail on it). */
function report(message) {
  console.error(`text: ${message}`); // eslint-disable-line no-console
}

/** Replace each {name} with params[name]. A missing value shows as ⟦name?⟧ on the page and is reported. */
export function fill(text, params, where = "") {
  return text.replace(/\{(\w+)\}/g, (whole, name) => {
    const value = params ? params[name] : undefined;
    if (value !== undefined && value !== null) return String(value);
    report(`no value for {${name}} in ${where || JSON.stringify(text)}`);
    return `⟦${name}?⟧`;
  });
}

export class Texts {
  /** `data`: the parsed text file, {language, html_lang, separator, ui: {...}, stages: {...}}. */
  constructor(data) {
    this.lang = data.language;
    this.htmlLang = data.html_lang || data.language;
    this.separator = data.separator ?? " ";
    this.ui = data.ui;
    this.stages = data.stages;
    this.t = this.t.bind(this);
    this.stage = this.stage.bind(this);
  }

  has(key) {
    return Object.hasOwn(this.ui, key);
  }

  /** A UI string, its {placeholders} filled from `params`. */
  t(key, params) {
    if (!this.has(key)) {
      report(`no UI text "${key}" for ${this.lang}`);
      return `⟦${key}⟧`;
    }
    return fill(this.ui[key], params, `${this.lang}:${key}`);
  }

  /**
   * A stage's {title, short, formula, explain}. `model` picks the entries (norm kind, placement,
   * positional kind, ...: see stage_text.js); `vars` fills their numbers ({d_model}, {n_heads}, ...).
   */
  stage(key, model, vars) {
    const known = Object.hasOwn(PANEL_OF, key) ? key : "unknown";
    const out = {};
    for (const field of STAGE_FIELDS) {
      const parts = stageKeys(known, field, model).map((k) => {
        if (!Object.hasOwn(this.stages, k)) {
          report(`no stage text "${k}" for ${this.lang}`);
          return `⟦${k}⟧`;
        }
        return fill(this.stages[k], vars, `${this.lang}:${k}`);
      });
      out[field] = parts.filter(Boolean).join(this.separator);
    }
    return out;
  }
}
