// Each lab panel's module is static/js/lab/panels/<name>.js, named as in the page's one list of panels
// (app/lab_panels.py, which the server renders into templates/lab.html as <section data-panel=name>, in
// page order). Neither the list, the order nor the titles are written here: a panel's module is imported
// the first time it is shown, so adding one is its file and nothing else. A module has load(state, info),
// controls(state, say, info, models, data) and draw(board, data, {say, s, info}); data: what load() returned.

const loaded = new Map(); // panel name -> its module's default export, once imported

/** The names of the panels the page lists, in its order. */
export function pageOrder() {
  return [...document.querySelectorAll("#panels > [data-panel]")].map((el) => el.dataset.panel);
}

/** Panel `name`'s module, imported the first time (only names the page lists). */
export async function loadPanel(name) {
  if (!pageOrder().includes(name)) throw new Error(`no lab panel ${name}`);
  if (!loaded.has(name)) loaded.set(name, (await import(`./${name}.js`)).default);
  return loaded.get(name);
}

/** A panel's module that loadPanel() has already imported. */
export function panelModule(name) {
  const module = loaded.get(name);
  if (!module) throw new Error(`lab panel ${name} is not loaded`);
  return module;
}
