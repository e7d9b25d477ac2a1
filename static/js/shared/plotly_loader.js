// Plotly (plotly.js's cartesian bundle: heatmap, bar, scatter; 1.5 MB instead of the full 4.8 MB)
// is not in the page's critical path: the HTML preloads it, main.js
// starts it at once, and go() waits for it only before the first chart is drawn, so the models,
// the texts, the tokens and the first trace load while the browser parses it. The script element
// itself is the only record (no module state).

const SRC = document.querySelector("link[rel=preload][as=script]")?.getAttribute("href") || "/static/vendor/plotly-cartesian.min.js";

/** Resolves when window.Plotly exists (the script is added on the first call). */
export function plotlyReady() {
  if (window.Plotly) return Promise.resolve();
  let script = document.getElementById("plotly-js");
  if (!script) {
    script = document.createElement("script");
    script.id = "plotly-js";
    script.src = SRC;
    script.async = true;
    document.head.append(script);
  }
  return new Promise((resolve, reject) => {
    script.addEventListener("load", () => resolve());
    script.addEventListener("error", () => reject(new Error("plotly.min.js did not load")));
  });
}
