// The recorded site's loader (written into a site as static/site.js by static_site/export.py). A page
// opened from file:// may fetch nothing and import no module, but it may add <script src> elements: each
// recorded answer is one such file, data/<name>.js, that hands its text to TE_SITE.put(key, text). The
// page's api.js asks TE_SITE.load(key) for the text of a request and parses it as the live answer.
window.TE_SITE = (function () {
  "use strict";
  let files = {}; // request key -> data file, relative to the site's root
  let about = { models: [], date: "", version: "" };
  const texts = {}; // request key -> the recorded response text, once its file ran
  const waiting = {}; // request key -> [resolve, reject] pairs
  return {
    /** data/index.js: every recorded request's file, and what was recorded (models, date, version). */
    setIndex(index, recorded) {
      files = index;
      about = recorded;
    },
    about() {
      return about;
    },
    /** A data file: the exact response text of one request. */
    put(key, text) {
      texts[key] = text;
      for (const [resolve] of waiting[key] || []) resolve(text);
      delete waiting[key];
    },
    /** Whether this site holds an answer to request `key`. */
    has(key) {
      return Object.prototype.hasOwnProperty.call(files, key);
    },
    /** The recorded text of request `key`, or undefined when this site holds none. */
    load(key) {
      if (Object.prototype.hasOwnProperty.call(texts, key)) return Promise.resolve(texts[key]);
      if (!Object.prototype.hasOwnProperty.call(files, key)) return Promise.resolve(undefined);
      return new Promise((resolve, reject) => {
        const first = !waiting[key];
        (waiting[key] = waiting[key] || []).push([resolve, reject]);
        if (!first) return;
        const script = document.createElement("script");
        script.src = files[key];
        script.async = true;
        script.addEventListener("error", () => {
          for (const [, fail] of waiting[key] || []) fail(new Error("recorded answer file missing: " + files[key]));
          delete waiting[key];
        });
        document.head.append(script);
      });
    },
  };
})();
