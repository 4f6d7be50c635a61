"""Section 90: every invalid sample, with its reason (they are excluded from statistics)."""

from __future__ import annotations

from .. import fmt
from ..data import ReportData
from ..html import Raw, table
from ..sections import Section, register_section


@register_section(90, "invalid-samples")
def invalid_samples(data: ReportData) -> Section | None:
    rows = [
        [
            g.key.platform,
            g.key.test_case + (f" [{fmt.dims(g.key.dims)}]" if g.key.dims else ""),
            g.key.scenario,
            g.key.role,
            g.key.metric,
            i.repetition,
            fmt.num(i.value),
            i.reason,
        ]
        for g in data.groups
        for i in g.invalid
    ]
    if not rows:
        return None
    note = Raw(
        '<p class="note">These samples were recorded but flagged invalid: by their '
        "workload, by a cross-sample check, or because their cell failed or timed out before"
        ' it finished (reason "cell failed: …"). They are counted in n-invalid and excluded'
        " from every statistic.</p>"
    )
    body = note + table(
        ["platform", "test case", "scenario", "role", "metric", "rep", "value", "reason"], rows
    )
    return Section(
        "Invalid samples",
        body,
        f"{len(rows)} invalid samples, all metrics (reasons in the HTML report)",
    )
