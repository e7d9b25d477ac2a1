// One panel per stage kind: each has load(ctx) (fetch what it draws) and draw(board, data, ctx).

import attention from "./attention.js";
import deltanet from "./deltanet.js";
import ffn from "./ffn.js";
import logits from "./logits.js";
import norm from "./norm.js";
import positional from "./positional.js";
import qkv from "./qkv.js";
import router from "./router.js";
import tokens from "./tokens.js";
import vectors from "./vectors.js";

export const PANELS = Object.freeze({ attention, deltanet, ffn, logits, norm, positional, qkv, router, tokens, vectors });
