"""`virtbench run --dry-run`: the cells a run would measure and how long they would take,
from the store's past cell times. Measures nothing, writes nothing."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from ..campaign.model import Cell


@dataclass(frozen=True)
class PlanRow:
    platform: str
    suite: str
    scenario: str
    cells: int
    seconds: float  # of its cells with a history (and their warm-ups)
    unknown_cells: int  # cells whose (platform, test case) has no past cell in the store
    unknown: tuple[str, ...]  # their test cases

    def estimate(self) -> str:
        if self.unknown_cells == self.cells:
            return "no history"
        said = duration_text(self.seconds)
        if self.unknown_cells:
            said += f" + {self.unknown_cells} cells with no history ({', '.join(self.unknown)})"
        return said


def duration_text(seconds: float) -> str:
    """7s, 4m34s, 2h05m: how hyperfine and the Phoronix Test Suite say times."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def rows(
    cells: list[Cell], history: dict[tuple[str, str], list[float]], warmup: int
) -> list[PlanRow]:
    """One row per (platform, suite, scenario) in run order. A cell is estimated at the
    median of its platform and test case's past cells; each (platform, test case, scenario)
    adds `warmup` more such runs (the unmeasured warm-ups)."""
    median = {k: statistics.median(v) for k, v in history.items() if v}
    count: Counter[tuple[str, str, str]] = Counter()
    seconds: dict[tuple[str, str, str], float] = {}
    unknown: dict[tuple[str, str, str], set[str]] = {}
    unknown_cells: Counter[tuple[str, str, str]] = Counter()
    warmed: set[tuple[str, str, str]] = set()
    for c in cells:
        key = (c.platform.name, c.suite, c.scenario)
        count[key] += 1
        unknown.setdefault(key, set())
        seconds.setdefault(key, 0.0)
        m = median.get((c.platform.name, c.test_case))
        if m is None:
            unknown[key].add(c.test_case)
            unknown_cells[key] += 1
            continue
        runs = 1
        if (c.platform.name, c.test_case, c.scenario) not in warmed:
            warmed.add((c.platform.name, c.test_case, c.scenario))
            runs += warmup
        seconds[key] += m * runs
    return [
        PlanRow(*key, n, seconds[key], unknown_cells[key], tuple(sorted(unknown[key])))
        for key, n in count.items()
    ]


def total(plan: list[PlanRow]) -> PlanRow:
    """The whole plan as one row."""
    return PlanRow(
        "total",
        "",
        "",
        sum(r.cells for r in plan),
        sum(r.seconds for r in plan),
        sum(r.unknown_cells for r in plan),
        tuple(sorted({t for r in plan for t in r.unknown})),
    )
