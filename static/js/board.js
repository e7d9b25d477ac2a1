// The panel area: chart cards kept by key between renders, so a redraw calls Plotly.react on
// the same div (fast updates when only the layer or head changes) instead of rebuilding.

import { exportButtons, purge } from "./shared/plot.js";
import { h } from "./shared/dom.js";

export class Board {
  constructor(root) {
    this.root = root;
    this.cards = new Map(); // key -> {card, plot, head}
    this.panel = null;
    this.used = new Set();
    this.t = (key) => key;
  }

  /** Start a render of `panel`; a different panel starts from an empty board. `t`: the UI text lookup. */
  begin(panel, t) {
    if (panel !== this.panel) this.clear();
    this.panel = panel;
    this.t = t;
    this.used = new Set();
  }

  /** A chart card for `key`: reused when it exists, with fresh title, badges and export buttons. */
  card(key, { title, badges = [], exportData, filename, className = "", note }) {
    let entry = this.cards.get(key);
    if (!entry) {
      const plot = h("div", { class: "plot", "data-key": key });
      const head = h("div", { class: "chart-head" });
      const foot = h("p", { class: "chart-note" });
      const card = h("section", { class: "chart-card", "data-key": key }, head, plot, foot);
      entry = { card, plot, head, foot };
      this.cards.set(key, entry);
    }
    entry.card.className = `chart-card ${className}`.trim();
    entry.head.replaceChildren(h("h3", { text: title }), h("span", { class: "badges" }, badges));
    if (exportData) entry.head.append(exportButtons(exportData, filename || key, this.t));
    entry.foot.textContent = note || "";
    entry.foot.hidden = !note;
    this.root.append(entry.card); // keeps the call order
    this.used.add(key);
    return entry.plot;
  }

  /** A non-chart block (chips, notes, tables) for `key`, rebuilt each time. */
  block(key, element, className = "") {
    let entry = this.cards.get(key);
    if (!entry) {
      const card = h("section", { class: `info-card ${className}`.trim(), "data-key": key });
      entry = { card, plot: null };
      this.cards.set(key, entry);
    }
    entry.card.replaceChildren(element);
    this.root.append(entry.card);
    this.used.add(key);
    return entry.card;
  }

  /** Remove what this render did not touch. */
  end() {
    for (const [key, entry] of [...this.cards]) {
      if (!this.used.has(key)) {
        purge(entry.plot);
        entry.card.remove();
        this.cards.delete(key);
      }
    }
  }

  clear() {
    for (const entry of this.cards.values()) {
      purge(entry.plot);
      entry.card.remove();
    }
    this.cards.clear();
    this.root.replaceChildren();
  }
}
