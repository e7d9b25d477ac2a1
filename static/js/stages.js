// The stepper's stage list, built from the model's described stages (GET /api/models/{name} `stages`, written by
// app/stage_descriptions.py): each stage comes with its stack, layer, site, hook, step, panel (`kind`) and
// whether it is its step's main tensor, in the order the forward pass reaches it. So Pre-LN and Post-LN, RoPE,
// SwiGLU, cross-attention ... each get their real order, and no stage name is read here.

const CROSS = "cross_"; // a cross-attention step's key is its self-attention step's, after this

/** A step's key as in self-attention: "cross_softmax" -> "softmax" (the same panel part, the same lab panel). */
export function ownKey(step) {
  return step.cross ? step.key.slice(CROSS.length) : step.key;
}

/**
 * Build the plan: sections (stack × pre/blocks/post), steps, the flat order, every stage's description by name
 * (`stages`) and its dims (`dims`). A step keeps its tensors per layer in `at` (`at.top` outside the blocks):
 * {main, extras, hook (the main's), hooks (the step's by hook), site (its site's in that layer, by hook)}.
 */
export function buildPlan(info) {
  const described = info.stages || [];
  const stages = new Map(described.map((row) => [row.name, row]));
  const dims = Object.fromEntries(described.map((row) => [row.name, row.dims]));
  const steps = new Map(); // id -> step
  const sections = [];
  const layersOf = {}; // stack -> Set of layer numbers
  const sites = new Map(); // "stack|layer|site" -> {hook: name}
  const withPos = new Set(described.filter((row) => row.step === "pos").map((row) => row.stack || ""));
  const sectionOf = (stack, phase) => {
    let section = sections.find((s) => s.stack === stack && s.phase === phase);
    if (!section) {
      section = { stack, phase, steps: [] };
      sections.push(section);
    }
    return section;
  };
  const addStep = (id, key, stack, phase, fields, met = []) => {
    const step = { id, key, stack, block: phase === "blocks", panel: null, cross: false, at: {}, ...fields };
    steps.set(id, step);
    const list = sectionOf(stack, phase).steps;
    // a step first met in a later layer (the FFN's, after a first layer of experts) goes after the steps that layer
    // has already shown; in the first layer that is the end of the list
    const last = Math.max(-1, ...met.map((s) => list.indexOf(s)));
    list.splice(met.length ? last + 1 : list.length, 0, step);
    return step;
  };
  let current = { where: null, met: [] }; // the steps met so far in the current block

  for (const row of described) {
    const stack = row.stack || "";
    const block = row.layer !== null;
    if (block) (layersOf[stack] ||= new Set()).add(row.layer);
    const siteKey = `${stack}|${row.layer}|${row.site}`;
    if (!sites.has(siteKey)) sites.set(siteKey, {});
    const site = sites.get(siteKey);
    site[row.hook] ??= row.name;
    if (!row.step) continue; // no stop of its own (a block's input: the step before it shows it)
    const phase = block ? "blocks" : layersOf[stack] && layersOf[stack].size ? "post" : "pre";
    const id = `${stack ? `${stack}.` : ""}${row.step}`;
    const where = `${stack}|${row.layer}`;
    if (current.where !== where) current = { where, met: [] };
    const step = steps.get(id) || addStep(id, row.step, stack, phase, { panel: row.kind, cross: row.site === "cross_attn" }, current.met);
    current.met.push(step);
    const at = (step.at[block ? row.layer : "top"] ||= { main: null, hook: null, extras: [], hooks: {}, site });
    if (row.main) Object.assign(at, { main: row.name, hook: row.hook, site });
    else at.extras.push(row.name);
    at.hooks[row.hook] ??= row.name;
    // Position enters through Q and K (RoPE) or the scores (ALiBi): still give it a stop, after the embedding.
    const posId = `${stack ? `${stack}.` : ""}pos`;
    if (row.step === "embed" && !withPos.has(stack) && !steps.has(posId)) addStep(posId, "pos", stack, phase, { panel: "positional" });
  }

  const layers = {};
  for (const [stack, set] of Object.entries(layersOf)) layers[stack] = [...set].sort((a, b) => a - b);

  const order = [];
  for (const section of sections) {
    if (section.phase === "blocks") {
      for (const layer of layers[section.stack] || []) {
        // a step some layers lack (RoPE in SmolLM3's NoPE layers, the router in a layer with one FFN) stops only where it is
        for (const step of section.steps) if (step.at[layer]) order.push({ id: step.id, layer });
      }
    } else {
      for (const step of section.steps) order.push({ id: step.id, layer: null });
    }
  }
  return { steps, sections, layers, order, stages, dims };
}

const NOTHING = Object.freeze({ main: null, hook: null, extras: [], hooks: {}, site: {} });

/** A step's tensors in one layer: {main, hook, extras, hooks, site} (names from the model's description). */
export function namesFor(step, layer) {
  return step.at[step.block ? layer : "top"] || NOTHING;
}

/** Index in plan.order for (stage id, layer); falls back to the closest sensible spot. */
export function indexOf(plan, id, layer) {
  let index = plan.order.findIndex((o) => o.id === id && (o.layer === null || o.layer === layer));
  if (index < 0) index = plan.order.findIndex((o) => o.id === id);
  if (index < 0 && id) {
    // another model: "softmax" <-> "encoder.softmax" / "decoder.softmax", same stop, first stack that has it
    const key = id.split(".").pop();
    const same = (o) => plan.steps.get(o.id).key === key;
    index = plan.order.findIndex((o) => same(o) && (o.layer === null || o.layer === layer));
    if (index < 0) index = plan.order.findIndex(same);
  }
  return index < 0 ? 0 : index;
}
