// The positional-encoding family in the positions panel: six small decoders that differ only in
// positions (training/pe_family.py). Its table comes from any member's meta (`pe_family`, in
// GET /api/models); the live demo runs one member on the lab's sentence and on the same tokens with
// all but the last shuffled (POST /api/trace with the `shuffle` intervention). No member served:
// nothing is shown.

import { api, decodeStages } from "../shared/api.js";
import { h, tokenText, tokenTexts } from "../shared/dom.js";
import { familyOf } from "../shared/model_menu.js";
import { findStage } from "../shared/stage_names.js";
import { numberField, selectField } from "./ui.js";


/**
 * The family table of the served members ({how, members} with only the rows that are served), or null.
 * `kinds`: the server's registry of positional encodings (GET /api/positional-encoding/kinds).
 */
export function familyTable(models, kinds = []) {
  const served = models.filter((m) => familyOf(m));
  if (!served.length) return null;
  const names = new Set(served.map((m) => m.name));
  const table = served[0].meta.pe_family;
  const members = (table.members || []).filter((row) => names.has(row.model));
  return members.length ? { ...table, members, kinds } : null;
}

/** The member the demo runs: the one asked for (the positions panel's `member`), else the lab's model if
 *  it is one, else the first. */
export function demoMember(s, v, table) {
  const names = table.members.map((row) => row.model);
  if (names.includes(v.member)) return v.member;
  return names.includes(s.model) ? s.model : names[0];
}

/** A number for the table: 3 decimals; tiny ones (|x| < 0.001) in scientific notation; 0 as 0. */
export function small(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  if (value === 0) return "0";
  return Math.abs(value) < 0.001 ? value.toExponential(1) : value.toFixed(3);
}

const bits = (value) => (value === null || value === undefined || !Number.isFinite(value) ? "–" : value.toFixed(3));

/** Rows in the learned table: from the reason the meta gives ("… has 64 rows …"), else the trained context. */
function tableRows(row) {
  const match = /(\d+) rows/.exec(row.bits_per_character_2x_why || "");
  return match ? Number(match[1]) : row.trained_context;
}

/** A deterministic order of the tokens: the start token (an empty span) and the last one stay put. */
export function shuffledOrder(tokens, seed) {
  const keep = tokens.length && tokens[0].start === tokens[0].end ? 1 : 0;
  const middle = Array.from({ length: Math.max(0, tokens.length - 1 - keep) }, (_, i) => i + keep);
  let x = (seed >>> 0) + 0x9e3779b9;
  const random = () => { // mulberry32
    x = (x + 0x6d2b79f5) >>> 0;
    let t = x;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = [...middle];
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  if (order.length > 1 && order.every((v, i) => v === middle[i])) [order[0], order[1]] = [order[1], order[0]];
  return [...Array(keep).keys(), ...order, ...(tokens.length > keep ? [tokens.length - 1] : [])];
}

function lastRow(answer, name) {
  const tensor = decodeStages(answer)[name];
  const rows = tensor.matrix("pos", "d_model");
  return rows[rows.length - 1];
}

/** Run the demo: the member on the lab's sentence and on its shuffled tokens. */
export async function loadDemo(s, v, table) {
  const model = demoMember(s, v, table);
  const tokens = (await api.tokenize({ model, text: s.text })).tokens;
  const order = shuffledOrder(tokens, v.seed);
  const moved = order.filter((v, i) => v !== i).length;
  if (moved < 2) return { model, tokens, tooShort: true };
  // the residual stream after layer 0's attention, as the table measures
  const first = findStage(s.models.find((m) => m.name === model), { hook: "resid_mid", layer: 0 });
  const base = { model, text: s.text, stages: [first], top_k: 5 };
  const [original, shuffled] = await Promise.all([api.trace(base), api.trace({ ...base, interventions: { shuffle: order } })]);
  const a = lastRow(original, first);
  const b = lastRow(shuffled, first);
  const norm = (v) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  return { model, tokens, original, shuffled, first: norm(a.map((x, i) => x - b[i])) / norm(a), tooShort: false };
}

function cell(text, attrs = {}) {
  return h("td", { ...attrs, text });
}

/** The table: one row per served member; the learned row says why it has no number at twice the context. */
export function familyBlock(table, s, say) {
  const ctx = table.members[0].trained_context;
  const head = h("thead", {},
    h("tr", {},
      h("th", { rowspan: "2", text: say("positions_pe_col_model") }),
      h("th", { colspan: "2", class: "group", text: say("positions_pe_col_bpc", { ctx }) }),
      h("th", { colspan: "2", class: "group", text: say("positions_pe_col_bpc2", { ctx2: 2 * ctx }) }),
      h("th", { colspan: "3", class: "group", text: say("positions_pe_col_shuffle") })),
    h("tr", {},
      h("th", { text: say("positions_pe_col_en") }), h("th", { text: say("positions_pe_col_zh") }),
      h("th", { text: say("positions_pe_col_en") }), h("th", { text: say("positions_pe_col_zh") }),
      h("th", { text: say("positions_pe_col_first") }), h("th", { text: say("positions_pe_col_last") }), h("th", { text: say("positions_pe_col_bits") })));
  const rows = table.members.map((row) => {
    const link = h("a", {
      href: `/?${new URLSearchParams({ model: row.model, text: s.text, lang: s.lang })}`,
      title: say("positions_pe_open", { model: row.model }),
      text: row.model,
    });
    const twice = row.bits_per_character_2x
      ? [cell(bits(row.bits_per_character_2x.en), { "data-col": "bpc2-en" }), cell(bits(row.bits_per_character_2x.zh), { "data-col": "bpc2-zh" })]
      : [cell(say("positions_pe_cannot", { rows: tableRows(row) }), { colspan: "2", class: "pe-cannot", "data-col": "bpc2", title: row.bits_per_character_2x_why || "" })];
    const sh = row.shuffle || {};
    return h("tr", { "data-model": row.model, class: row.model === s.model ? "current" : undefined },
      h("td", {}, link),
      cell(bits(row.bits_per_character.en), { "data-col": "bpc-en" }),
      cell(bits(row.bits_per_character.zh), { "data-col": "bpc-zh" }),
      ...twice,
      cell(small(sh.first_layer_change), { "data-col": "first" }),
      cell(small(sh.last_token_change), { "data-col": "last" }),
      cell(`${bits(sh.bits_per_token_original)} → ${bits(sh.bits_per_token_shuffled)}`, { "data-col": "bits" }));
  });
  return h("div", { class: "pe-family" },
    h("h3", { text: say("positions_pe_table_title", { n: table.members.length }) }),
    h("table", { class: "kv-table pe-table" }, head, h("tbody", {}, rows)),
    ...familyNotes(table, say).map((text) => h("p", { class: "lab-note pe-note", text })));
}

function extremes(rows, value) {
  const sorted = [...rows].sort((a, b) => value(a) - value(b));
  return [sorted[0], sorted[sorted.length - 1]];
}

/** The explanation under the table: how it was measured, then facts read from the numbers shown. */
export function familyNotes(table, say) {
  const rows = table.members;
  const ctx = rows[0].trained_context;
  const sentences = Math.max(...rows.map((r) => (r.shuffle && r.shuffle.sentences) || 0));
  const steps = [...new Set(rows.map((r) => r.training && r.training.steps).filter((x) => x !== undefined))];
  const tokens = [...new Set(rows.map((r) => r.training && r.training.tokens_seen).filter((x) => x !== undefined))];
  const notes = [say("positions_pe_how", { ctx, ctx2: 2 * ctx, sentences })];
  if (steps.length === 1 && tokens.length === 1) {
    notes.push(say("positions_pe_trained", { n: rows.length, steps: steps[0].toLocaleString("en-US"), tokens: tokens[0].toLocaleString("en-US") }));
  }
  const unplaced = new Set((table.kinds || []).filter((k) => k.where === "nowhere").map((k) => k.name));
  const none = rows.find((r) => unplaced.has(r.pos_encoding) && r.shuffle); // the member with no positions at all
  if (none) {
    notes.push(say("positions_pe_order_fact", { model: none.model, first: small(none.shuffle.first_layer_change), last: small(none.shuffle.last_token_change) }));
  }
  const learned = rows.find((r) => !r.bits_per_character_2x);
  if (learned) notes.push(say("positions_pe_learned_fact", { model: learned.model, rows: tableRows(learned), ctx2: 2 * ctx }));
  if (rows.length > 1) {
    const [bestEn] = extremes(rows, (r) => r.bits_per_character.en);
    const [bestZh] = extremes(rows, (r) => r.bits_per_character.zh);
    notes.push(say("positions_pe_read_best", { ctx, en_model: bestEn.model, en: bits(bestEn.bits_per_character.en), zh_model: bestZh.model, zh: bits(bestZh.bits_per_character.zh) }));
    const longer = rows.filter((r) => r.bits_per_character_2x);
    if (longer.length > 1) {
      const [least, most] = extremes(longer, (r) => Math.abs(r.bits_per_character_2x.en - r.bits_per_character.en));
      notes.push(say("positions_pe_read_longer", {
        ctx, ctx2: 2 * ctx,
        most: most.model, most_from: bits(most.bits_per_character.en), most_to: bits(most.bits_per_character_2x.en),
        least: least.model, least_from: bits(least.bits_per_character.en), least_to: bits(least.bits_per_character_2x.en),
      }));
    }
    const shuffled = rows.filter((r) => r.shuffle);
    if (shuffled.length > 1) {
      const [least, most] = extremes(shuffled, (r) => r.shuffle.last_token_change);
      notes.push(say("positions_pe_read_shuffle", { most: most.model, most_value: small(most.shuffle.last_token_change), least: least.model, least_value: small(least.shuffle.last_token_change) }));
    }
  }
  return notes;
}

function tokenLine(answer) {
  return tokenTexts(answer.tokens).join(" | ");
}

function topList(answer, say) {
  return h("ol", { class: "pe-top" }, (answer.top_tokens || []).map((p) => h("li", { text: say("positions_pe_demo_guess", { token: tokenText(p), prob: small(p.prob) }) })));
}

/** The demo's controls (member, seed) and what it shows. */
export function demoBlock(table, demo, s, v, say) {
  const members = table.members.map((row) => [row.model, row.model]);
  const controls = h("div", { class: "lab-controls" },
    selectField("member", members, demoMember(s, v, table), say("positions_pe_demo_member")),
    numberField("seed", v.seed, say("positions_pe_demo_seed"), { min: 0, max: 999999 }));
  const out = [h("h3", { text: say("positions_pe_demo_title") }), controls];
  if (demo.error) out.push(h("p", { class: "lab-error", text: say("panel_failed", { detail: demo.error.message || String(demo.error) }) }));
  else if (demo.value.tooShort) out.push(h("p", { class: "lab-note", text: say("positions_pe_demo_short", { model: demo.value.model, n: demo.value.tokens.length }) }));
  else {
    const d = demo.value;
    const toBits = (nats) => (nats === null || nats === undefined ? "–" : (nats / Math.LN2).toFixed(3));
    out.push(
      h("p", { class: "lab-note", text: say("positions_pe_demo_lead", { model: d.model }) }),
      h("div", { class: "iv-tables" },
        h("div", { "data-side": "original" }, h("h4", { text: say("positions_pe_demo_original") }), h("p", { class: "pe-tokens", text: tokenLine(d.original) }), topList(d.original, say)),
        h("div", { "data-side": "shuffled" }, h("h4", { text: say("positions_pe_demo_shuffled") }), h("p", { class: "pe-tokens", text: tokenLine(d.shuffled) }), topList(d.shuffled, say))),
      h("p", { class: "pe-demo-numbers", text: say("positions_pe_demo_numbers", { first: small(d.first), before: toBits(d.original.loss), after: toBits(d.shuffled.loss) }) }),
    );
  }
  return h("div", { class: "pe-demo" }, out);
}
