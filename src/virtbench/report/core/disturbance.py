"""Section 5: how many cells another tenant disturbed, and by what: first in the report and
in the terminal summary, because every figure below is read in its light.

Reads the `disturbance` and `disturbed` labels the runner put on every sample of a cell
(metrics/disturbance.py); a run stored before them has neither and gets no section.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...results import DISTURBANCE_LABEL, DISTURBED_LABEL
from ..data import ReportData
from ..html import Raw, Td, h, table
from ..sections import Section, register_section

MAX_ROWS = 30  # disturbed cells listed in the HTML (the invalid-samples section has all)


def cell_readings(data: ReportData) -> dict[str, tuple[dict[str, Any], str | None, Any]]:
    """cell id -> (its disturbance label, what disturbed it or None, its first sample row)."""
    out: dict[str, tuple[dict[str, Any], str | None, Any]] = {}
    for row in data.samples:
        labels = row["labels"]
        reading = labels.get(DISTURBANCE_LABEL)
        if isinstance(reading, dict) and row["cell_id"] not in out:
            out[row["cell_id"]] = (reading, labels.get(DISTURBED_LABEL), row)
    return out


def summary_line(data: ReportData) -> tuple[str, list[tuple[dict[str, Any], str, Any]]] | None:
    """The one line, and the disturbed cells; None for a run without readings."""
    cells = cell_readings(data)
    if not cells:
        return None
    disturbed = [(r, str(what), row) for r, what, row in cells.values() if what]
    if not disturbed:
        worst = max(float(r.get("outside_cpu_pct") or 0) for r, _w, _row in cells.values())
        return (
            f"Host quiet: no cell of {len(cells)} disturbed (outside CPU at most {worst:.1f}%).",
            [],
        )
    kinds = Counter(what for _r, what, _row in disturbed)
    by = Counter(
        part.rsplit(" ", 1)[0]
        for r, _w, _row in disturbed
        for part in str(r.get("by") or "").split(", ")[:1]
        if part and part != "-"
    )
    excluded = any(row["valid"] == 0 for _r, _w, row in disturbed)
    line = (
        f"DISTURBED: {len(disturbed)} of {len(cells)} cells"
        f" ({', '.join(f'{k}: {n}' for k, n in kinds.most_common())};"
        f" mostly by {', '.join(c for c, _n in by.most_common(3)) or 'unknown'})"
        + (
            ": their samples are invalid, left out of every statistic, score and verdict."
            if excluded
            else ': kept in the statistics ([campaign] disturbed = "keep").'
        )
    )
    return line, disturbed


@register_section(5, "disturbance")
def disturbance_section(data: ReportData) -> Section | None:
    found = summary_line(data)
    if found is None:
        return None
    line, disturbed = found
    mark = '<span class="badge warn">disturbed</span> ' if disturbed else ""
    body = Raw(f"<p>{mark}<b>{h(line)}</b></p>")
    if disturbed:
        rows = [
            [
                row["platform"],
                row["test_case"],
                row["scenario"],
                row["repetition"],
                what,
                Td(f"{float(r.get('outside_cpu_pct') or 0):.1f}", "num"),
                Td(f"{float(r.get('steal_pct') or 0):.1f}", "num"),
                Td(f"{float(r.get('psi_cpu_pct') or 0):.1f}", "num"),
                str(r.get("by") or "-"),
            ]
            for r, what, row in disturbed[:MAX_ROWS]
        ]
        body += table(
            [
                "platform",
                "test case",
                "scenario",
                "rep",
                "disturbed by",
                "outside CPU %",
                "steal %",
                "PSI cpu %",
                "outside processes",
            ],
            rows,
        )
    return Section("Disturbance", body, markdown=line)
