// The loss curve under the training-progress slider: train and validation loss against the training
// step, from the checkpoint's meta.history, and (where the checkpoint measured it) the induction
// score on real held-out sentences typed twice, one line per language, on a second axis: the
// slider is there to watch induction form on real text. A marker stands at the step whose weights
// the page shows. Only numbers the meta holds are drawn; a model without history shows nothing.

import { snapshotsOf } from "./context.js";
import { LANGS } from "./shared/i18n.js";
import { baseLayout, plotConfig, purge, safe } from "./shared/plot.js";

const drawn = new WeakMap(); // element -> what it shows (its traces and layout, as JSON)
const waiting = new WeakMap(); // element -> its first drawing, one frame after the stage's charts (a Promise)
const finite = (x) => typeof x === "number" && Number.isFinite(x);
const COLORS = { train_loss: "#9aa7b8", val_loss: "#1f4e8c", en: "#d9822b", zh: "#2e8b57" };

/** The languages meta.history measured induction in: the pages' own first (LANGS, in their order), then any others. */
function languagesOf(rows) {
  const found = new Set(rows.flatMap((r) => (r.natural && typeof r.natural === "object" ? Object.keys(r.natural) : [])));
  return [...LANGS.filter((l) => found.has(l)), ...[...found].filter((l) => !LANGS.includes(l)).sort()];
}

/**
 * The lines meta.history holds, each only at the steps where it has a number:
 * [{key, axis ("y": loss, "y2": score), lang?, x: steps, y: values}].
 */
export function historySeries(info) {
  const history = info && info.meta && info.meta.history;
  if (!Array.isArray(history)) return [];
  const rows = history.filter((r) => r && Number.isInteger(r.step)).sort((a, b) => a.step - b.step);
  const series = [];
  const line = (key, axis, get, lang) => {
    const points = rows.filter((r) => finite(get(r)));
    if (points.length) series.push({ key, axis, lang, x: points.map((r) => r.step), y: points.map(get) });
  };
  line("train_loss", "y", (r) => r.train_loss);
  line("val_loss", "y", (r) => r.val_loss);
  for (const lang of languagesOf(rows)) {
    line(`induction_${lang}`, "y2", (r) => r.natural && r.natural[lang] && r.natural[lang].induction && r.natural[lang].induction.score, lang);
  }
  return series;
}

/** The training step of the weights shown at slider position `position` (the last position: the final weights), or null. */
export function shownStep(info, position) {
  const snaps = snapshotsOf(info);
  if (position < snaps.length) return snaps[position].step;
  const steps = info.meta && info.meta.training && info.meta.training.steps;
  if (Number.isInteger(steps)) return steps;
  const history = historySeries(info);
  return history.length ? Math.max(...history.map((s) => s.x[s.x.length - 1])) : null;
}

function traceOf(s, t) {
  const name = s.lang ? t("curve_induction", { language: t(`lang_name_${s.lang === "zh" ? "zh" : "en"}`) }) : t(`curve_${s.key}`);
  const color = COLORS[s.lang || s.key] || "#7a4fa0";
  return {
    type: "scatter",
    mode: s.x.length > 1 ? "lines" : "markers",
    name: safe(name),
    x: s.x,
    y: s.y,
    yaxis: s.axis,
    line: { color, width: s.key === "val_loss" ? 2.5 : 1.8, dash: s.axis === "y2" ? "dot" : "solid" },
    marker: { color, size: 6 },
    hovertemplate: `${safe(name)}: %{y:.3f}<extra></extra>`,
  };
}

/** Draw (or clear) the curve into `el` for `info`, marking the weights at slider position `position`. */
export function drawLossCurve(el, t, info, position, present) {
  const series = historySeries(info);
  el.hidden = present || !series.length;
  if (el.hidden) {
    purge(el);
    el.removeAttribute("data-step");
    return;
  }
  const step = shownStep(info, position);
  const traces = series.map((s) => traceOf(s, t));
  const val = series.find((s) => s.key === "val_loss");
  const at = val && step !== null ? val.x.indexOf(step) : -1;
  if (at >= 0) {
    traces.push({
      type: "scatter",
      mode: "markers",
      name: safe(t("curve_shown")),
      x: [step],
      y: [val.y[at]],
      showlegend: false,
      marker: { color: "#b2302b", size: 10, line: { color: "#ffffff", width: 1.5 } },
      hovertemplate: `${safe(t("curve_shown"))}: ${safe(t("curve_val_loss"))} %{y:.3f}<extra></extra>`,
    });
  }
  const scores = series.some((s) => s.axis === "y2");
  const layout = baseLayout({
    height: 190,
    margin: { l: 64, r: scores ? 64 : 16, t: 10, b: 40 },
    showlegend: true,
    legend: { orientation: "v", xref: "container", x: 0, xanchor: "left", y: 1, yanchor: "top", font: { size: 11 }, itemwidth: 30 }, // left of the loss axis
    hovermode: "x unified",
    xaxis: { title: { text: safe(t("curve_step")), standoff: 4 }, zeroline: false, automargin: true },
    yaxis: { title: { text: safe(t("curve_loss")) }, zeroline: false, automargin: true },
    shapes:
      step === null
        ? []
        : [{ type: "line", xref: "x", yref: "paper", x0: step, x1: step, y0: 0, y1: 1, line: { color: "#b2302b", width: 1.5, dash: "dash" } }],
  });
  layout.font = { ...layout.font, size: 12 }; // small beside the stage's own charts
  if (scores) {
    // scores lie in [0, 1]: the whole scale, so a rise reads as what it is
    const ticks = { tickmode: "linear", tick0: 0, dtick: 0.25 };
    layout.yaxis2 = { title: { text: safe(t("curve_score")) }, overlaying: "y", side: "right", range: [0, 1], showgrid: false, zeroline: false, ...ticks };
  }
  el.dataset.step = step === null ? "" : String(step);
  el.setAttribute("aria-label", t("curve_aria"));
  // render() calls this on every step: the same curve is not drawn again (Plotly.react would
  // still rebuild its defaults and margins, tens of ms per step)
  const key = JSON.stringify([traces, layout]);
  if (el.data && drawn.get(el) === key) return;
  drawn.set(el, key);
  const run = () => {
    if (drawn.get(el) === key && !el.hidden) window.Plotly.react(el, traces, layout, { ...plotConfig("loss_curve"), displayModeBar: false });
  };
  if (el.data) {
    run();
    return;
  }
  // the first drawing waits for the next frame, so the stage's own charts (drawn by the same
  // render) are on screen first; curveDrawn(el) resolves when it is done
  const first = new Promise((resolve) => {
    afterPaint(() => {
      try {
        run();
      } finally {
        resolve();
      }
    });
  });
  waiting.set(el, first);
}

/** Run `fn` once the next frame is painted (in a hidden tab, which paints nothing: soon). */
function afterPaint(fn) {
  if (document.hidden) setTimeout(fn, 0);
  else requestAnimationFrame(() => setTimeout(fn, 0));
}

/** Resolves when the drawing of the curve in `el` that waits for the next frame (if any) is done. */
export function curveDrawn(el) {
  return waiting.get(el) || Promise.resolve();
}
