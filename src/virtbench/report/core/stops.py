"""Section 15: adaptive repetitions, why each test case stopped repeating (store/stops.py)."""

from __future__ import annotations

from ..data import ReportData
from ..html import Raw, Td, table
from ..sections import Section, register_section

KIND = {"precision": "good", "max-repetitions": "noisy", "budget": "noisy"}  # td classes


@register_section(15, "adaptive")
def stops_section(data: ReportData) -> Section | None:
    stops = data.store.run_stops(data.run_id)
    plan = data.settings.get("adaptive")
    if not stops and not plan:
        return None
    target = f"±{plan['precision_pct']:g}%" if plan else "?"
    rows = [
        [
            s.test_case,
            Td(s.reason, KIND.get(s.reason, "")),
            s.repetitions,
            f"±{s.precision_pct:.2f}%" if s.precision_pct is not None else "–",
            s.worst_group or "–",
            f"{s.spent_s:.0f} s",
        ]
        for s in stops
    ]
    intro = Raw(
        f"<p>Each test case repeated until every group of its primary metric had a 95% CI"
        f" within {target} of its mean, or a cap stopped it"
        + (
            f" (at least {plan['min_repetitions']}, at most {plan['max_repetitions']}"
            f" repetitions, {plan['budget_s']:g} s of measured time per test case)"
            if plan
            else ""
        )
        + ".</p>"
    )
    body = intro + table(
        ["test case", "stopped on", "repetitions", "worst CI", "worst group", "measured"], rows
    )
    md = [f"adaptive repetitions (target {target}):"] + [f"- {s.detail}" for s in stops]
    return Section("Adaptive repetitions", body, "\n".join(md))
