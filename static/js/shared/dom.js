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

const BYTE_TOKEN = /^(?:<0x[0-9A-Fa-f]{2}>)+$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The length a UTF-8 lead byte announces when `bytes` are that lead and fewer continuation bytes than it needs,
 *  else 0 (a whole character, or no start of one). */
function unfinished(bytes) {
  const lead = bytes[0];
  const need = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  const continued = bytes.slice(1).every((b) => b >= 0x80 && b <= 0xbf);
  return need && bytes.length < need && continued ? need : 0;
}

/**
 * How each of `tokens` reads on screen. A byte token ("<0xE6><0x88>", a piece of a character the
 * vocabulary lacks) is named by the character its group spells and the bytes it holds: "我 1–2/3"
 * (我 = E6 88 91). A group is the run of byte tokens with the same character span [start, end) that
 * the API gives every token; its bytes are the tokens' own, so nothing is guessed. A group that is the
 * start of a character the tokens shown never finish (generation cut mid-character) reads "◌ 1/3": the
 * bytes it holds of how many its first byte announces. A group whose bytes are not UTF-8 keeps the raw text.
 */
export function tokenTexts(tokens) {
  const shown = tokens.map((tok) => visible(tok.text));
  let i = 0;
  while (i < tokens.length) {
    const tok = tokens[i];
    // characters before bytes ("␣<0xE6>", span " 法"): its bytes start a group with the byte tokens after it
    const tail = BYTE_TOKEN.test(tok.text) ? null : tok.text.match(TRAILING_BYTES);
    const head = tail && tok.end > tok.start && i + 1 < tokens.length && BYTE_TOKEN.test(tokens[i + 1].text)
      && tokens[i + 1].end === tok.end ? tok.text.slice(0, tail.index) : null;
    if (!BYTE_TOKEN.test(tok.text) && head === null) { // characters, perhaps with bytes among them: those spelled
      if (BYTES.test(tok.text)) shown[i] = spelled(tok.text, visible);
      i += 1;
      continue;
    }
    if (!(tok.end > tok.start)) { // no span (a candidate next token): it stands alone
      shown[i] = loneByteText(tok.text) ?? shown[i];
      i += 1;
      continue;
    }
    const first = head === null ? tok : tokens[i + 1];
    let j = i + 1;
    while (j < tokens.length && BYTE_TOKEN.test(tokens[j].text) && tokens[j].start === first.start && tokens[j].end === first.end) j += 1;
    const bytes = tokens.slice(i, j).map((t, k) => bytesOf(k === 0 && head !== null ? tail[0] : t.text));
    const total = bytes.reduce((n, b) => n + b.length, 0);
    let chars = null;
    try { chars = UTF8.decode(new Uint8Array(bytes.flat())); } catch { chars = null; }
    const announced = unfinished(bytes.flat());
    if (!chars && announced) {
      let at = 0;
      bytes.forEach((b, k) => {
        shown[i + k] = `◌ ${b.length === 1 ? at + 1 : `${at + 1}–${at + b.length}`}/${announced}`;
        at += b.length;
      });
    }
    if (chars) {
      let at = 0;
      bytes.forEach((b, k) => {
        const range = b.length === 1 ? `${at + 1}` : `${at + 1}–${at + b.length}`;
        shown[i + k] = `${visible(chars)} ${range}/${total}`;
        at += b.length;
      });
    }
    if (head && shown[i] !== visible(tok.text)) shown[i] = `${visible(head)}${shown[i]}`;
    if (head && shown[i] === visible(tok.text)) shown[i] = spelled(tok.text, visible);
    i = j;
  }
  return shown;
}

/** How one token reads on screen when it stands alone (a target, an answer, a candidate next token): the one
 *  naming of tokenTexts, so a byte token reads as the character it spells, never as "<0xE5>". */
export function tokenText(token) {
  return tokenTexts([{ text: token.text, start: 0, end: 0 }])[0];
}

/** A text the server wrote with byte tokens joined ("…<0xE6><0x88><0x91>"): each run of bytes read as the
 *  characters it spells; a character the run does not finish reads as loneByteText does ("佀…使 1–2/3"), a byte
 *  that starts no character keeps its raw text. */
export function readText(text) {
  return spelled(String(text), (part) => part);
}

const BYTES = /<0x[0-9A-Fa-f]{2}>/;
const TRAILING_BYTES = /(?:<0x[0-9A-Fa-f]{2}>)+$/;
const CONTROL = /^[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]$/; // invisible; \t \n \r have signs (visible)
const BYTE_RUN = /(?:<0x[0-9A-Fa-f]{2}>)+/g;

/** `text` with each run of byte tokens spelled as characters; `show` applied to what is not a byte's name. */
function spelled(text, show) {
  const plain = (part) => (part ? show(part) : "");
  let out = "";
  let at = 0;
  for (const run of text.matchAll(BYTE_RUN)) {
    out += plain(text.slice(at, run.index));
    const bytes = bytesOf(run[0]);
    let k = 0;
    while (k < bytes.length) {
      const n = bytes[k] >= 0xf0 && bytes[k] < 0xf8 ? 4 : bytes[k] >= 0xe0 ? 3 : bytes[k] >= 0xc0 ? 2 : bytes[k] < 0x80 ? 1 : 0;
      const piece = bytes.slice(k, k + Math.max(n, 1));
      let chars = null;
      if (n && piece.length === n) { try { chars = UTF8.decode(new Uint8Array(piece)); } catch { chars = null; } }
      if (chars && CONTROL.test(chars)) chars = null; // a control character would show as nothing: its byte stays
      const raw = piece.map((b) => `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`).join("");
      if (chars) { out += show(chars); k += n; continue; }
      const lone = n && piece.length < n ? loneByteText(raw) : null; // the run ends inside a character
      out += lone ?? `<0x${bytes[k].toString(16).toUpperCase().padStart(2, "0")}>`;
      k += lone ? piece.length : 1;
    }
    at = run.index + run[0].length;
  }
  return out + plain(text.slice(at));
}

/** The bytes of a byte token ("<0xE4><0xBD>" -> [0xE4, 0xBD]). */
function bytesOf(text) {
  return text.match(/[0-9A-Fa-f]{2}(?=>)/g).map((b) => parseInt(b, 16));
}

/**
 * A byte token with no neighbours to group with (a candidate next token): the character it spells when its
 * bytes are a whole one ("我"); when they are the first k of a character's n bytes, the characters it can still
 * become and which bytes it holds: "佀…使 1–2/3" (E4 BD is the start of every character from U+4F40 to U+4F7F).
 * null when the bytes start no character (a lone continuation byte keeps its raw text).
 */
export function loneByteText(text) {
  const bytes = bytesOf(text);
  const n = bytes[0] >= 0xf0 && bytes[0] < 0xf8 ? 4 : bytes[0] >= 0xe0 ? 3 : bytes[0] >= 0xc0 ? 2 : bytes[0] < 0x80 ? 1 : 0;
  if (!n || bytes.length > n || bytes.slice(1).some((b) => (b & 0xc0) !== 0x80)) return null;
  const spell = (tail) => { try { return UTF8.decode(new Uint8Array([...bytes, ...tail])); } catch { return null; } };
  if (bytes.length === n) return spell([]) && !CONTROL.test(spell([])) ? visible(spell([])) : null;
  const lo = spell(Array(n - bytes.length).fill(0x80));
  const hi = spell(Array(n - bytes.length).fill(0xbf));
  if (!lo || !hi) return null;
  const range = bytes.length === 1 ? "1" : `1–${bytes.length}`;
  return `${visible(lo)}…${visible(hi)} ${range}/${n}`;
}

/** The tokens as chips: the text and the id of each (a byte token: its character, its raw bytes in the title). */
export function tokenChips(tokens, className = "") {
  return h(
    "ol",
    { class: `chips ${className}`.trim() },
    tokenTexts(tokens).map((text, i) =>
      h(
        "li",
        { class: text === visible(tokens[i].text) ? "chip" : "chip byte-chip", title: `#${i} · id ${tokens[i].id} · ${tokens[i].text}` },
        h("span", { class: "chip-text", text }),
        h("span", { class: "chip-id", text: String(tokens[i].id) }),
      ),
    ),
  );
}
