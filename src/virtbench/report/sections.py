"""The report's section registry: every part of the report is a registered section.

Adding a section for your suite (web curves, latency tables, co-location matrices) needs no
edit of the report core. Put a module (or package) in `virtbench/report/suites/` (imported
automatically). The report reads the store only: a section never imports a workload.

    from virtbench.report.sections import Section, register_section
    from virtbench.report import html, svg

    @register_section(order=45, name="web-curves")
    def web_curves(data):                      # data: virtbench.report.data.ReportData
        groups = data.select(suite="web")      # analysed groups (mean, CI, CV, n, invalid)
        if not groups:
            return None                        # nothing to show: the section is left out
        table = html.table(["platform", "rate"], [[g.key.platform, g.key.dim("rate")] ...])
        return Section("Web: response rate vs offered rate", table, markdown="...")

`data.samples` are the store's rows with their labels parsed (`row["labels"]`), one dict
shared by every row with the same labels and equal nested values shared too: read them,
never change them in place (report/labels.py).

`order` places the section (lower first). Built-in orders: 10 run, 20 host, 30 per-suite
results, 50 memory block-size curve, 60 scores, 80 time series, 90 invalid samples. A
section function may return None, one Section, or a list of them. `html` must be safe
markup (use `html.table`, `html.h` to escape, `svg.bar_chart` / `svg.line_chart` for
charts); `markdown` (optional) is printed in the terminal summary, so keep it compact.
A section that raises is shown as an error box; it never breaks the rest of the report.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import plugins
from .html import Raw, h

if TYPE_CHECKING:
    from .data import ReportData


@dataclass
class Section:
    title: str
    html: str
    markdown: str = ""
    anchor: str = ""  # defaults to a slug of the title


SectionFn = Callable[["ReportData"], "Section | list[Section] | None"]


@dataclass(frozen=True)
class _Entry:
    order: float
    name: str
    fn: SectionFn


_REGISTRY: dict[str, _Entry] = {}


def register_section(order: float, name: str | None = None) -> Callable[[SectionFn], SectionFn]:
    """Register `fn(data) -> Section | list[Section] | None` at position `order`."""

    def deco(fn: SectionFn) -> SectionFn:
        key = name or f"{fn.__module__}.{fn.__qualname__}"
        _REGISTRY[key] = _Entry(order, key, fn)  # re-registering (reload) replaces
        return fn

    return deco


def registered() -> list[_Entry]:
    return sorted(_REGISTRY.values(), key=lambda e: (e.order, e.name))


def discover() -> None:
    """Import the built-in sections (`report/core/`) and the `report/suites/` plug-ins, each
    module (or package: it imports its own parts) of the two."""
    plugins.load("virtbench.report.core", recursive=False)
    plugins.load("virtbench.report.suites", recursive=False)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def render(data: ReportData) -> list[Section]:
    """Run every registered section; failures become visible error sections."""
    out: list[Section] = []
    used: set[str] = set()
    for entry in registered():
        try:
            result = entry.fn(data)
        except Exception as exc:  # noqa: BLE001 - one bad section must not lose the report
            tb = traceback.format_exc(limit=4)
            result = Section(
                f"Section '{entry.name}' failed",
                Raw(f'<div class="section-error">{h(repr(exc))}<pre>{h(tb)}</pre></div>'),
                markdown=f"(report section '{entry.name}' failed: {exc!r})",
            )
        items = result if isinstance(result, list) else [result] if result else []
        for s in items:
            base = s.anchor or slug(s.title)
            anchor, i = base, 2
            while anchor in used:
                anchor, i = f"{base}-{i}", i + 1
            used.add(anchor)
            s.anchor = anchor
            out.append(s)
    return out
