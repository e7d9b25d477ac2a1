// The model chooser's entries, for the explorer and the lab: the models on their own first, then
// each family of trained look-alikes (a checkpoint whose meta carries `pe_family`: the
// positional-encoding family, training/pe_family.py) in one <optgroup>, so six pe-* models do not
// push tiny-gpt out of sight. The default model is chosen by the caller, not by the order here.

import { h } from "./dom.js";

/** The family a model belongs to ("pe_family"), or null. */
export function familyOf(model) {
  return model && model.meta && model.meta.pe_family ? "pe_family" : null;
}

/** <option>s for the lone models, then an <optgroup label=familyLabel> with the family members. */
export function modelOptions(models, familyLabel) {
  const option = (m) => h("option", { value: m.name, text: m.name });
  const family = models.filter((m) => familyOf(m));
  return [
    ...models.filter((m) => !familyOf(m)).map(option),
    ...(family.length ? [h("optgroup", { label: familyLabel }, family.map(option))] : []),
  ];
}
