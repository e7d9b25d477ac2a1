"""The lab page's panels, in page order, made from the one list of lab experiments (app/lab: EXPERIMENTS).

`app/routers/pages.py` renders it into `templates/lab.html`: the table of contents and one
`<section data-panel=name>` per panel, in this order, each experiment's section carrying where its panel
asks (`data-path`, `data-method`), the model families it refuses (`data-refuses`) and its older names
(`data-aliases`). `static/js/lab/panels/index.js` imports `panels/<name>.js` by that name, so the script
repeats neither the list, the order, the titles nor a path; the texts are `<name>_title` and `<name>_lead`
in `static/text/lab.<lang>.json`. `tests/app/test_page_layout.py` keeps them in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.lab import EXPERIMENTS
from app.lab.common import Experiment


@dataclass(frozen=True)
class LabPanel:
    """One panel: `name` (its module, its link /lab?panel=<name>, its URL fields, its text keys) and the
    experiment it shows (None for the two panels that read /api/trace: interventions and compare)."""

    name: str
    experiment: Experiment[Any] | None = None

    @property
    def title_key(self) -> str:
        return f"{self.name}_title"

    @property
    def lead_key(self) -> str:
        return f"{self.name}_lead"

    @property
    def aliases(self) -> tuple[str, ...]:
        return self.experiment.aliases if self.experiment else ()


def _in_page_order() -> tuple[LabPanel, ...]:
    """A panel per lab experiment, in the order of app/lab's EXPERIMENTS (the one list of experiments), and the
    two that read /api/trace: the interventions side by side first, a variant to compare after sampling."""
    panels = [LabPanel("interventions")]
    for experiment in EXPERIMENTS:
        panels.append(LabPanel(experiment.name, experiment))
        if experiment.name == "sampling":
            panels.append(LabPanel("compare"))
    return tuple(panels)


LAB_PANELS: tuple[LabPanel, ...] = _in_page_order()


def lab_panel_names() -> list[str]:
    return [panel.name for panel in LAB_PANELS]


def lab_panel_named(asked: str | None) -> str:
    """The panel a link asks for: a panel's name, or an older name of it (/lab?panel=flow); else the first."""
    for panel in LAB_PANELS:
        if asked == panel.name or asked in panel.aliases:
            return panel.name
    return LAB_PANELS[0].name
