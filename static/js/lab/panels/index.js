// The lab's panels, in page order: each has id, load(state, info), controls(...) and draw(board, data, c).

import compare from "./compare.js";
import interventions from "./interventions.js";
import masks from "./masks.js";
import parameters from "./parameters.js";
import positions from "./positions.js";
import sampling from "./sampling.js";
import scaling from "./scaling.js";

export const PANELS = Object.freeze([interventions, scaling, masks, positions, parameters, sampling, compare]);
