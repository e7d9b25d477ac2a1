// The lab's panels, in page order: each has id, load(state, info), controls(...) and draw(board, data, c).

import ablation from "./ablation.js";
import compare from "./compare.js";
import complexity from "./complexity.js";
import flash from "./flash.js";
import generate from "./generate.js";
import interventions from "./interventions.js";
import kvcache from "./kvcache.js";
import lens from "./lens.js";
import masks from "./masks.js";
import norms from "./norms.js";
import parameters from "./parameters.js";
import positions from "./positions.js";
import sampling from "./sampling.js";
import scaling from "./scaling.js";

export const PANELS = Object.freeze([interventions, scaling, masks, positions, parameters, sampling, compare,
  complexity, flash, kvcache, generate, norms, lens, ablation]);

/** Lab II's panels (what attention costs, what the model uses): the page lists them after Lab I's. */
export const LAB2 = Object.freeze(["complexity", "flash", "kvcache", "generate", "norms", "lens", "ablation"]);
