"""The lab page's panels, in page order: the one list the page follows.

`app/routers/pages.py` renders it into `templates/lab.html` (the table of contents and one
`<section data-panel=name>` per panel, in this order); `static/js/lab/panels/index.js` maps each
name to its module without repeating the order or the titles; the texts are `<name>_title` and
`<name>_lead` in `static/text/lab.<lang>.json`. `tests/app/test_page_layout.py` keeps them in step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabPanel:
    """One panel: `name` (its module, its link /lab?panel=<name>, its text keys) and the API path it asks."""

    name: str
    api: str  # the endpoint its numbers come from: /api/lab/<experiment>, or /api/trace for the two that run the model twice

    @property
    def title_key(self) -> str:
        return f"{self.name}_title"

    @property
    def lead_key(self) -> str:
        return f"{self.name}_lead"


LAB_PANELS: tuple[LabPanel, ...] = (
    LabPanel("interventions", "/api/trace"),
    LabPanel("scaling", "/api/lab/scaling"),
    LabPanel("masks", "/api/lab/masks"),
    LabPanel("positions", "/api/lab/positions"),
    LabPanel("parameters", "/api/lab/parameters"),
    LabPanel("sampling", "/api/lab/sampling"),
    LabPanel("compare", "/api/trace"),
    LabPanel("complexity", "/api/lab/complexity"),
    LabPanel("flash", "/api/lab/flash"),
    LabPanel("kvcache", "/api/lab/kv-cache"),
    LabPanel("generate", "/api/lab/generate"),
    LabPanel("norms", "/api/lab/norm-placement"),
    LabPanel("lens", "/api/lab/logit-lens"),
    LabPanel("ablation", "/api/lab/ablation"),
)


def lab_panel_names() -> list[str]:
    return [panel.name for panel in LAB_PANELS]
