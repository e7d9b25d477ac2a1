// DOM helpers both pages use: build elements (h), find one by id ($), show a token's text
// (visible) and a row of token chips. Token text reaches the DOM only through textContent.

/** The element with this id. */
export const $ = (id) => document.getElementById(id);

/** An element: `attrs` (class, text, on<event> handlers, other attributes), then its children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** How a token reads on screen: visible whitespace, never empty. */
export function visible(text) {
  const shown = String(text).replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/\r/g, "␍");
  return shown === "" ? "∅" : shown;
}

/** The tokens as chips: the text and the id of each. */
export function tokenChips(tokens, className = "") {
  return h(
    "ol",
    { class: `chips ${className}`.trim() },
    tokens.map((tok, i) =>
      h(
        "li",
        { class: "chip", title: `#${i} · id ${tok.id}` },
        h("span", { class: "chip-text", text: visible(tok.text) }),
        h("span", { class: "chip-id", text: String(tok.id) }),
      ),
    ),
  );
}
