// Each lab panel's module, by its name in the page's one list of panels (app/lab_panels.py, which
// the server renders into templates/lab.html as <section data-panel=name>, in page order). Neither
// the order nor the titles are written here. A module has load(state, info), controls(state, say,
// info, models, data) and draw(board, data, {say, s, info}); data: what its load() returned.

import ablation from "./ablation.js";
import compare from "./compare.js";
import complexity from "./complexity.js";
import flash from "./flash.js";
import flow from "./flow.js";
import generate from "./generate.js";
import headcount from "./headcount.js";
import interventions from "./interventions.js";
import kvcache from "./kvcache.js";
import lens from "./lens.js";
import linear from "./linear.js";
import masks from "./masks.js";
import norms from "./norms.js";
import objectives from "./objectives.js";
import parameters from "./parameters.js";
import positions from "./positions.js";
import sampling from "./sampling.js";
import scaling from "./scaling.js";

export const MODULES = Object.freeze({
  ablation,
  compare,
  complexity,
  flash,
  flow,
  generate,
  headcount,
  interventions,
  kvcache,
  lens,
  linear,
  masks,
  norms,
  objectives,
  parameters,
  positions,
  sampling,
  scaling,
});

/** The names of the panels the page lists, in its order. */
export function pageOrder() {
  return [...document.querySelectorAll("#panels > [data-panel]")].map((el) => el.dataset.panel);
}
