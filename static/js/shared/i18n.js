// Text lookup. Every word a page shows lives in static/text/<file>.json (the explorer's <lang>.json, the
// lab's lab.<lang>.json, what both show in shared.<lang>.json; edited by translators); this module only
// finds a key and fills its {placeholders}. It keeps no language of its own: the language is the page
// state's `lang`, and one Texts object is made per language (the page's file joined to the shared one).

import { SITE } from "./site.js";

/** The languages the pages are written in: the server's one list (lessons/languages.py), rendered into the page
 *  as <html data-langs="en zh">, so the page lists none of its own. */
export const LANGS = (document.documentElement.dataset.langs || "en").split(" ");

/** Fetch one text file (`name`: "en", "lab.zh", "shared.en", ...) from this origin (a recorded site: its copy). */
async function textFile(name) {
  const url = `/static/text/${encodeURIComponent(name)}.json`;
  if (SITE) {
    const text = await SITE.load(`GET ${url} `);
    if (text === undefined) throw new Error(`text file for "${name}" is not in this site`);
    return JSON.parse(text);
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`text file for "${name}": HTTP ${response.status}`);
  return response.json();
}

/** A page's words in one language: its own file and shared.<lang> (what both pages show, such as the
 *  interventions view), their sections joined; a key in both files is a mistake, reported. */
export async function loadTexts(own, lang) {
  const [data, shared] = await Promise.all([textFile(own), textFile(`shared.${lang}`)]);
  const joined = { ...data };
  for (const [section, entries] of Object.entries(shared)) {
    if (typeof entries !== "object") continue; // language, html_lang, separator, list_separator: the page's own
    const into = joined[section] || {};
    for (const key of Object.keys(entries)) if (Object.hasOwn(into, key)) report(`text "${key}" is in ${own}.json and shared.${lang}.json`);
    joined[section] = { ...into, ...entries };
  }
  return new Texts(joined);
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
  /** `data`: the parsed text file, {language, html_lang, separator, list_separator, ui: {...}, and other sections (stages: {...})}. */
  constructor(data) {
    this.lang = data.language;
    this.htmlLang = data.html_lang || data.language;
    this.separator = data.separator ?? " ";
    this.listSeparator = data.list_separator ?? ", "; // "、" in Chinese: 层 0、1、2
    this.data = data;
    this.ui = data.ui;
    this.t = this.t.bind(this);
    this.list = this.list.bind(this);
  }

  /** Items as a list in this language (layer numbers: "0, 1, 2" / "0、1、2"). */
  list(items) {
    return items.join(this.listSeparator);
  }

  has(key) {
    return Object.hasOwn(this.ui, key);
  }

  /** A UI string, its {placeholders} filled from `params`. */
  t(key, params) {
    return this.entry("ui", key, params);
  }

  /** The entry `key` of section `section` ("ui", "stages"), filled from `params`; a missing one shows as ⟦key⟧ and is reported. */
  entry(section, key, params) {
    const entries = this.data[section] || {};
    if (!Object.hasOwn(entries, key)) {
      report(`no ${{ ui: "UI", stages: "stage" }[section] || section} text "${key}" for ${this.lang}`);
      return `⟦${key}⟧`;
    }
    return fill(entries[key], params, `${this.lang}:${key}`);
  }
}
