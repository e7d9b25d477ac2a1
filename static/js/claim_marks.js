// Where the lesson bar's claims point on the chart (issue 41): a row_top claim measured on the view on screen
// speaks of one row of the head's map (its query, by position) and one cell in it (the key it peaks on, a
// character's byte tokens together). The attention panel outlines them (panels/attention.js) and, on a projector,
// brings that row into view. Only claims measured on this very view are marked: never a line of another sentence.

import { isPresent } from "./shared/screen_fit.js";

/** The marks of a claims answer (navigate.js loadClaims): [{row, from, to, cross}], token positions; a coreference
 * baseline (row_over_column) adds {column: true, row, last, from, to}: the key's column over the rows after it, whose
 * mean weight is the claim's baseline. Row marks come first (the chart keeps the first one's label, showMark). */
export function claimMarks(claims) {
  if (!claims) return [];
  const answer = claims.differs ? claims.view : claims.lesson;
  if (!answer) return [];
  const span = (at) => {
    const [from, to = from] = String(at).split("–").map(Number);
    return { from, to };
  };
  const shown = answer.claims.filter((c) => c.on_view && !c.panel && Number.isInteger(c.values.row));
  const rows = shown.filter((c) => c.kind === "row_top").map((c) => ({ row: c.values.row, ...span(c.values.top_at), cross: Boolean(c.values.cross) }));
  const columns = shown
    .filter((c) => c.kind === "row_over_column" && Number.isInteger(c.values.rows_from))
    .map((c) => ({ column: true, row: c.values.rows_from, last: c.values.rows_to, ...span(c.values.key_at), cross: false }));
  return [...rows, ...columns];
}

/** Plotly shapes outlining each mark's row (thin) and cell (thick) on a map of `nKeys` columns, and a baseline's
 * column (dashed): the cells whose mean the claim compares the row with. */
export function markShapes(marks, nKeys) {
  const line = (width) => ({ color: "#e8590c", width });
  return marks.flatMap((m) => m.column ? [
    { type: "rect", xref: "x", yref: "y", x0: m.from - 0.5, x1: m.to + 0.5, y0: m.row - 0.5, y1: m.last + 0.5, line: { ...line(2.5), dash: "dash" }, layer: "above" },
  ] : [
    { type: "rect", xref: "x", yref: "y", x0: -0.5, x1: nKeys - 0.5, y0: m.row - 0.5, y1: m.row + 0.5, line: line(1.5), layer: "above" },
    { type: "rect", xref: "x", yref: "y", x0: m.from - 0.5, x1: m.to + 0.5, y0: m.row - 0.5, y1: m.row + 0.5, line: line(3.5), layer: "above" },
  ]);
}

/** On a projector, scroll just enough that the first marked row is on screen (the chart may be taller than what
 * is left of 720 px under the lesson bar): the bar stays in view as far as the row allows. */
export function showMark(plot, marks) {
  if (!marks.length || marks[0].column || !isPresent() || !plot._fullLayout) return;
  const axis = plot._fullLayout.yaxis;
  const y = plot.getBoundingClientRect().top + axis._offset + axis.l2p(marks[0].row);
  const room = 60; // the row, and a little below it
  if (y > window.innerHeight - room) window.scrollBy({ top: y - (window.innerHeight - room), behavior: "instant" });
  else if (y < room) window.scrollBy({ top: y - room, behavior: "instant" });
}
