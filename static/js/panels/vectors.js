// Stages whose tensor is one vector per token: embedding, attention output, residual sums, FFN out.

import { drawTokenMatrix, fetchStages } from "./common.js";

export default {
  async load(ctx) {
    return fetchStages(ctx, [ctx.names.main]);
  },
  draw(board, stages, ctx) {
    const tensor = stages[ctx.names.main];
    drawTokenMatrix(board, "main", ctx, tensor, { title: ctx.text.title });
  },
};
