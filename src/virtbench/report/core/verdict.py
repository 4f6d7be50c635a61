"""Section 11: the answer first, one sentence per non-baseline platform · scenario."""

from __future__ import annotations

import re

from ...analysis.headline import headlines
from ..data import ReportData
from ..html import Raw, h
from ..sections import Section, register_section

NOTE = (
    "95% intervals over the run's rounds; <b>same</b>: the interval lies within the noise"
    " floor (±2%, or the A/A floor measured on this host), <b>faster</b>/<b>slower</b>:"
    " beyond it, <b>undecided</b>: neither (docs/verdicts.md)."
)


def _code(escaped: str) -> str:
    """`a command` in a sentence (already escaped) as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def _repetitions(data: ReportData) -> int | None:
    reps = data.settings.get("repetitions")
    return reps if isinstance(reps, int) and not data.settings.get("adaptive") else None


@register_section(11, "verdict")
def verdict_section(data: ReportData) -> Section | None:
    if not data.baseline or not data.geomeans and not data.comparisons:
        return None
    lines = headlines(
        data.geomeans, data.comparisons, data.groups, data.baseline, _repetitions(data)
    )
    if not lines:
        return None
    scenarios = {x.scenario for x in lines}

    def who(x) -> str:
        return x.platform + (f" · {x.scenario}" if len(scenarios) > 1 else "")

    items = "".join(f"<li><b>{h(who(x))}</b>: {_code(h(x.text))}</li>" for x in lines)
    body = Raw(f'<ul class="headline">{items}</ul><p class="note">{NOTE}</p>')
    md = [f"## verdict against {data.baseline}", ""]
    md += [f"- {who(x)}: {x.text}" for x in lines]
    return Section("Verdict", body, "\n".join(md))
