"""Section 90: the invalid samples (they are excluded from statistics), grouped by platform,
test case, scenario and reason.

A co-location campaign flags thousands of samples for one cause (every step of every
environment's client out of sockets): one row each buried the report (measured:
docs/code-measurements.md). A row is one cause where it struck: its count, the metrics, roles,
repetitions and dimension values it hit, and its reason with the numbers that vary given as
their range. Each sample stays in `virtbench results` (its `invalid` reason).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ...analysis.groups import Group
from .. import fmt
from ..data import ReportData
from ..html import Raw, Td, h, scroll, table
from ..sections import Section, register_section

# a free-standing number (fd-unavail=918, 7.7%), not one inside a name (neighbour-1, e1000,
# 4K, 2.0s): the part of a reason that varies from sample to sample
_NUMBER = re.compile(r"(?<![\w./-])\d+(?:\.\d+)?(?!\w|\.\d)")
# ...except a code, which names a cause instead of measuring one: "exit 1" (an error) and
# "exit 137" (killed) are two causes, not the range "exit 1–137"
_CODE = re.compile(
    r"\b(?:exit(?:ed)?(?: with)?(?: status| code)?|status|code|signal|errno|rc|returncode)"
    r"[ =:]*(\d+)",
    re.IGNORECASE,
)
_SLOT = "\0"
MAX_LISTED = 20  # values of one column listed before "+N more"
MAX_EXAMPLE = 600  # characters of the example reason shown (a cell's error can be long)


def reason_template(reason: str) -> tuple[str, list[str]]:
    """A reason with its numbers taken out (codes left in), and the numbers."""
    codes = {m.start(1) for m in _CODE.finditer(reason)}
    numbers: list[str] = []

    def slot(m: re.Match[str]) -> str:
        if m.start() in codes:
            return m.group()
        numbers.append(m.group())
        return _SLOT

    return _NUMBER.sub(slot, reason), numbers


@dataclass
class Cause:
    """Invalid samples of one platform, test case and scenario for one reason template."""

    platform: str
    test_case: str
    scenario: str
    template: str
    count: int = 0
    example: str = ""
    numbers: list[set[str]] = field(default_factory=list)
    metrics: Counter = field(default_factory=Counter)
    roles: Counter = field(default_factory=Counter)
    repetitions: set[int] = field(default_factory=set)
    dims: dict[str, set] = field(default_factory=dict)

    def add(self, g: Group, repetition: int, reason: str, numbers: list[str]) -> None:
        self.count += 1
        self.example = self.example or reason
        if not self.numbers:
            self.numbers = [set() for _ in numbers]
        for slot, n in zip(self.numbers, numbers, strict=True):
            slot.add(n)
        self.metrics[g.key.metric] += 1
        self.roles[g.key.role] += 1
        self.repetitions.add(repetition)
        for k, v in g.key.dims:
            self.dims.setdefault(k, set()).add(v)

    def reason(self) -> str:
        """The template with each number, or its range when it varies (918–1688)."""
        parts = self.template.split(_SLOT)
        out = parts[0]
        for slot, rest in zip(self.numbers, parts[1:], strict=True):
            lo, hi = min(slot, key=float), max(slot, key=float)
            out += (lo if lo == hi else f"{lo}–{hi}") + rest
        return out


def causes(groups: list[Group]) -> list[Cause]:
    """The invalid samples of `groups` by (platform, test case, scenario, reason template), in
    the groups' order."""
    out: dict[tuple[str, str, str, str], Cause] = {}
    for g in groups:
        for i in g.invalid:
            template, numbers = reason_template(i.reason)
            k = (g.key.platform, g.key.test_case, g.key.scenario, template)
            c = out.get(k)
            if c is None:
                c = out[k] = Cause(*k)
            c.add(g, i.repetition, i.reason, numbers)
    return list(out.values())


def _listed(values: list[str]) -> str:
    more = len(values) - MAX_LISTED
    return ", ".join(values[:MAX_LISTED]) + (f", +{more} more" if more > 0 else "")


def _counted(c: Counter) -> str:
    return _listed([f"{k} ({n})" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))])


def _values(key: str, vs: set) -> str:
    """The values one dimension label took: integer runs, sizes, or a list."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vs):
        if key.endswith("_bytes"):
            return _listed([fmt.size(v) for v in sorted(vs)])
        return fmt.int_ranges(vs)
    nums = all(isinstance(v, int | float) and not isinstance(v, bool) for v in vs)
    return _listed([str(v) for v in sorted(vs, key=float if nums else str)])


def where(c: Cause) -> str:
    """Where it struck: each dimension label with the values it took (step 0–9); dict and
    list labels (a neighbour's schedule) are left to the export."""
    return "; ".join(
        f"{k.removesuffix('_bytes')} {_values(k, vs)}"
        for k, vs in sorted(c.dims.items())
        if not any(fmt.is_container(v) for v in vs)
    )


def _reason_cell(c: Cause) -> Raw:
    text = h(c.reason())
    if c.example != c.reason():
        ex = c.example if len(c.example) <= MAX_EXAMPLE else c.example[:MAX_EXAMPLE] + "…"
        text += f"<br><small>e.g. {h(ex)}</small>"
    return Raw(text)


@register_section(90, "invalid-samples")
def invalid_samples(data: ReportData) -> Section | None:
    found = causes(data.groups)
    if not found:
        return None
    # campaign order: the baseline platform first, scenarios as run, the larger cause first
    plat = {p: i for i, p in enumerate(data.platforms)}
    scen = {s: i for i, s in enumerate(data.scenarios())}
    found.sort(
        key=lambda c: (
            plat.get(c.platform, len(plat)),
            c.test_case,
            scen.get(c.scenario, len(scen)),
            -c.count,
        )
    )
    total = sum(c.count for c in found)
    rows = [
        [
            c.platform,
            Td(c.test_case, "name"),
            c.scenario,
            _reason_cell(c),
            Td(str(c.count), "num"),
            _counted(c.metrics),
            _counted(c.roles),
            fmt.int_ranges(c.repetitions),
            where(c) or "–",
        ]
        for c in found
    ]
    note = Raw(
        f'<p class="note">{total} samples were recorded but flagged invalid: by their '
        "workload, by a cross-sample check, or because their cell failed or timed out before"
        ' it finished (reason "cell failed: …"). They are counted in n-invalid and excluded'
        " from every statistic. One row per platform, test case, scenario and reason; numbers"
        " that vary within a row are given as their range, with an example reason below."
        " Every sample with its reason: <code>virtbench results</code> (label"
        " <code>invalid</code>).</p>"
    )
    body = note + scroll(
        table(
            [
                "platform",
                "test case",
                "scenario",
                "reason",
                "samples",
                "metrics (samples)",
                "roles (samples)",
                "rep",
                "where (dimension labels)",
            ],
            rows,
        )
    )
    # the terminal summary is unchanged (golden v1 summaries are byte-identical)
    md = f"{total} invalid samples, all metrics (reasons in the HTML report)"
    return Section("Invalid samples", body, md)
