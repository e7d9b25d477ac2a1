// Which measured head scores the page shows, and from which probe (model/heads.py): random tokens
// typed twice, `[bos] r r` (meta.head_scores, "random"), or real held-out sentences typed twice,
// `[bos] s s` (meta.natural_head_scores, one list per language, "natural"). A head can pass the
// first and fail the second, so real text is preferred where the checkpoint measured it, and every
// label says which probe it comes from. A decoder may also carry the coreference probe's scores
// (meta.coreference_head_scores: a pronoun's row on the noun it refers to), read first: it names the
// one thing a head does on real sentences. Pure functions of the model info and the sentence.

export const PATTERNS = ["previous-token", "first-token", "self", "duplicate-token", "induction", "coreference"];

/** The language a sentence is mostly written in, as the probes name it: "zh" when Han characters outnumber Latin letters, else "en". */
export function sentenceLang(text) {
  const han = (String(text || "").match(/\p{Script=Han}/gu) || []).length;
  const latin = (String(text || "").match(/\p{Script=Latin}/gu) || []).length;
  return han > latin ? "zh" : "en";
}

/** The checkpoint's head-score lists, preferred first: [{probe, lang, entries}] (real text in `lang`, else English, else any). */
export function scoreLists(info, lang) {
  const meta = (info && info.meta) || {};
  const lists = [];
  const coreference = meta.coreference_head_scores;
  if (Array.isArray(coreference) && coreference.length) lists.push({ probe: "coreference", lang: "en", entries: coreference });
  const natural = meta.natural_head_scores;
  if (natural && typeof natural === "object" && !Array.isArray(natural)) {
    const found = [lang, "en", ...Object.keys(natural)].find((l) => Array.isArray(natural[l]) && natural[l].length);
    if (found) lists.push({ probe: "natural", lang: found, entries: natural[found] });
  }
  if (Array.isArray(meta.head_scores) && meta.head_scores.length) lists.push({ probe: "random", lang: null, entries: meta.head_scores });
  return lists;
}

const scoreOf = (entry, pattern) => (entry && entry.scores && typeof entry.scores[pattern] === "number" ? entry.scores[pattern] : null);

/**
 * What the measured scores say about one self-attention head: {label, score, probe, lang, other},
 * from the first list (real text first) that names a pattern for it; `other`: the same pattern's
 * score on the other probe ({probe, lang, score}) or null. null when no list names one.
 */
export function headLabel(info, lang, { stack = "", layer, head }) {
  const lists = scoreLists(info, lang);
  const find = (list) => list.entries.find((e) => e && e.layer === layer && e.head === head && (e.stack || "") === (stack || ""));
  for (const list of lists) {
    const entry = find(list);
    if (!entry || !PATTERNS.includes(entry.label)) continue;
    const rest = lists.find((l) => l !== list);
    const otherScore = rest ? scoreOf(find(rest), entry.label) : null;
    return {
      label: entry.label,
      score: scoreOf(entry, entry.label),
      probe: list.probe,
      lang: list.lang,
      other: otherScore === null ? null : { probe: rest.probe, lang: rest.lang, score: otherScore },
    };
  }
  return null;
}

/** The self-attention head with the highest measured `pattern` score, real text first: {layer, head, score, probe, lang}, or null. */
export function bestHead(info, pattern, lang) {
  for (const list of scoreLists(info, lang)) {
    const fits = list.entries.filter((e) => e && !e.stack && scoreOf(e, pattern) !== null);
    if (!fits.length) continue;
    const best = fits.reduce((a, b) => (scoreOf(b, pattern) > scoreOf(a, pattern) ? b : a));
    return { layer: best.layer, head: best.head, score: scoreOf(best, pattern), probe: list.probe, lang: list.lang };
  }
  return null;
}

/** "{pattern} ({probe})" for a head selector option; `known`: a headLabel. */
export function shortLabel(t, known) {
  return t("head_option", { pattern: t(`pat_${known.label}`), probe: t(`probe_short_${known.probe}`) });
}

/** The sentences under an attention chart (`texts`: a loaded Texts): what the head does on its probe, then on the other one. */
export function labelNote(texts, known) {
  const { t } = texts;
  const fmt = (x) => (x === null ? "?" : x.toFixed(2));
  const pattern = t(`pat_${known.label}`);
  const language = (lang) => t(`lang_name_${lang === "zh" ? "zh" : "en"}`);
  const parts = [t(`head_label_${known.probe}`, { pattern, score: fmt(known.score), language: language(known.lang) })];
  if (known.other) parts.push(t(`head_label_other_${known.other.probe}`, { pattern, score: fmt(known.other.score), language: language(known.other.lang) }));
  // a probe's label is a habit on the probe's text, not all the head does: on the chapter's sentence the same
  // head can also carry a word (layer 23 head 4 of SmolLM2: first-token 0.86 on the probe, "is" → "France" here)
  parts.push(t("head_label_also"), t("head_label_saved"));
  return parts.join(texts.separator);
}
