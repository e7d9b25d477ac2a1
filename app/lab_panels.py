"""The lab page's panels, in page order, made from the one list of lab experiments (app/lab: EXPERIMENTS).

`app/routers/pages.py` renders it into `templates/lab.html` (the table of contents and one
`<section data-panel=name>` per panel, in this order); `static/js/lab/panels/index.js` imports
`panels/<name>.js` by that name, so it repeats neither the list, the order nor the titles; the
texts are `<name>_title` and `<name>_lead` in `static/text/lab.<lang>.json`.
`tests/app/test_page_layout.py` keeps them in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.lab import EXPERIMENTS


@dataclass(frozen=True)
class LabPanel:
    """One panel: `name` (its module, its link /lab?panel=<name>, its text keys) and the API path it asks."""

    name: str
    api: str  # where its numbers come from: /api/lab/<experiment>, or /api/trace for the two that run the model twice

    @property
    def title_key(self) -> str:
        return f"{self.name}_title"

    @property
    def lead_key(self) -> str:
        return f"{self.name}_lead"


def _in_page_order() -> tuple[LabPanel, ...]:
    """A panel per lab experiment, in the order of app/lab's EXPERIMENTS (the one list of experiments), and the
    two that read /api/trace: the interventions side by side first, a variant to compare after sampling."""
    panels = [LabPanel("interventions", "/api/trace")]
    for experiment in EXPERIMENTS:
        panels.append(LabPanel(experiment.panel, experiment.route))
        if experiment.name == "sampling":
            panels.append(LabPanel("compare", "/api/trace"))
    return tuple(panels)


LAB_PANELS: tuple[LabPanel, ...] = _in_page_order()


def lab_panel_names() -> list[str]:
    return [panel.name for panel in LAB_PANELS]
