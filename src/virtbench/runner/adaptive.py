"""Adaptive repetitions: after the first `min_repetitions` rounds, one more round of a test
case while some group of its primary metric (per platform, scenario and dimensions; role
target; valid samples only) has a 95% CI half-width above `precision_pct` % of its mean,
unless a cap says stop. The rule itself (`decide`) is a pure function of sample lists.

Caps, checked in this order after precision: `max_repetitions`; then `budget_s`, the measured
time of the test case's cells (start to finish, every platform and scenario): a round is not
started if the mean round so far would take it over the budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..analysis import groups as groups_mod
from ..analysis.stats import summarize, t_critical
from ..campaign.model import Adaptive
from ..results import SOLO_PEAK_SCENARIO
from ..store.db import CellRow, Store

PRECISION = "precision"  # every group reached the target
MAX_REPETITIONS = "max-repetitions"
BUDGET = "budget"
REASONS = (PRECISION, MAX_REPETITIONS, BUDGET)
MAX_ESTIMATE = 100_000  # repetitions beyond this are said as "more than"


def precision_pct(values: Sequence[float]) -> float | None:
    """The 95% CI half-width as % of |mean|; None when undefined (n < 2, mean 0)."""
    s = summarize(values)
    if s.ci_half is None or s.mean is None:
        return None
    if s.ci_half == 0:
        return 0.0
    return None if s.mean == 0 else 100.0 * s.ci_half / abs(s.mean)


def repetitions_needed(values: Sequence[float], target_pct: float) -> int | None:
    """Repetitions at which the CI would reach `target_pct` if mean and stdev stayed as
    they are: a forecast for the console, never a decision."""
    s = summarize(values)
    if s.stdev is None or not s.mean:
        return None
    goal = target_pct / 100.0 * abs(s.mean)
    if s.stdev == 0:
        return s.n
    # first a normal-quantile guess, then walk up with Student's t
    n = max(2, math.ceil((1.96 * s.stdev / goal) ** 2))
    while n <= MAX_ESTIMATE:
        if t_critical(n - 1) * s.stdev / math.sqrt(n) <= goal:
            return n
        n = n + 1 if n < 200 else int(n * 1.05)
    return MAX_ESTIMATE + 1


@dataclass(frozen=True)
class Decision:
    test_case: str
    reason: str | None  # None: another round
    repetitions: int  # rounds done
    spent_s: float
    worst: str  # the group furthest from the target ("" when none has samples)
    worst_pct: float | None  # its precision, None when undefined
    needed: int | None  # forecast repetitions for the worst group

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def text(self, plan: Adaptive) -> str:
        """One line: where the test case stands, and why it stops (or goes on)."""
        where = f" (worst: {self.worst})" if self.worst else ""
        ci = f"±{self.worst_pct:.2f}%" if self.worst_pct is not None else "no CI yet"
        head = (
            f"{self.test_case}: {self.repetitions} repetitions, {ci}{where},"
            f" {self.spent_s:.0f} s measured"
        )
        if self.reason == PRECISION:
            return f"{head}: stopped, precision reached (±{plan.precision_pct:g}%)"
        need = ""
        if self.needed is not None:
            need = (
                f"; ±{plan.precision_pct:g}% needs about {self.needed} repetitions"
                if self.needed <= MAX_ESTIMATE
                else f"; ±{plan.precision_pct:g}% needs more than {MAX_ESTIMATE} repetitions"
            )
        if self.reason == MAX_REPETITIONS:
            return f"{head}: stopped at max_repetitions ({plan.max_repetitions}){need}"
        if self.reason == BUDGET:
            return (
                f"{head}: stopped, a round more would exceed budget_s ({plan.budget_s:g} s){need}"
            )
        return f"{head}: one more round{need}"


def decide(
    plan: Adaptive,
    test_case: str,
    repetitions: int,
    groups: dict[str, Sequence[float]],
    spent_s: float,
) -> Decision:
    """Stop or go on, from the valid values of each group (name -> values)."""
    ranked = sorted(
        ((precision_pct(v), name) for name, v in groups.items()),
        key=lambda pn: (math.inf if pn[0] is None else pn[0], pn[1]),
    )
    worst_pct, worst = ranked[-1] if ranked else (None, "")
    needed = repetitions_needed(groups[worst], plan.precision_pct) if worst else None
    # precise only on at least min_repetitions valid values in every group: a round whose
    # samples are invalid (a disturbed cell) is a round run, not a repetition measured, and
    # two lucky values must not stop a test case the plan wanted measured more often
    enough = all(len(v) >= plan.min_repetitions for v in groups.values())
    reached = bool(ranked) and enough and worst_pct is not None and worst_pct <= plan.precision_pct
    round_s = spent_s / repetitions if repetitions else 0.0
    reason = None
    if repetitions < plan.min_repetitions:
        reason = None
    elif reached:
        reason = PRECISION
    elif repetitions >= plan.max_repetitions:
        reason = MAX_REPETITIONS
    elif spent_s + round_s > plan.budget_s:
        reason = BUDGET
    return Decision(test_case, reason, repetitions, spent_s, worst, worst_pct, needed)


# --- reading a run's state from the store -----------------------------------------------
def _measured(rows: Iterable[CellRow]) -> Iterable[CellRow]:
    return (r for r in rows if r.scenario != SOLO_PEAK_SCENARIO)


def assess(store: Store, run_id: str, plan: Adaptive, test_cases: Iterable[str]) -> list[Decision]:
    """The decision for each of `test_cases` from what the store holds of the run."""
    wanted = set(test_cases)
    cells = [c for c in _measured(store.cells(run_id)) if c.test_case in wanted]
    reps: dict[str, int] = {}
    spent: dict[str, float] = {}
    for c in cells:
        reps[c.test_case] = max(reps.get(c.test_case, 0), c.repetition)
        if c.started_at and c.finished_at:
            spent[c.test_case] = spent.get(c.test_case, 0.0) + c.finished_at - c.started_at
    values: dict[str, dict[str, list[float]]] = {tc: {} for tc in wanted}
    rows = [r for r in store.sample_rows(run_id) if r["test_case"] in wanted]
    for g in groups_mod.build(rows, store.description(run_id)):
        k = g.key
        if g.primary and k.role == "target" and k.scenario != SOLO_PEAK_SCENARIO:
            values[k.test_case][_name(k.platform, k.scenario, k.dims_text)] = g.values
    # a platform and scenario with no valid sample at all (cells failed, samples invalid)
    # is a group that is not precise, not one that is left out
    for c in cells:
        where = _name(c.platform, c.scenario)
        if not any(n == where or n.startswith(where + " ") for n in values[c.test_case]):
            values[c.test_case][where] = []
    first = {}
    for c in cells:
        first.setdefault(c.test_case, c.seq)
    return [
        decide(plan, tc, reps[tc], values[tc], spent.get(tc, 0.0))
        for tc in sorted(first, key=first.__getitem__)
    ]


def _name(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def plan_text(plan: Adaptive, test_cases: int) -> str:
    return (
        f"adaptive repetitions: each test case repeats until every group of its primary"
        f" metric has a 95% CI within ±{plan.precision_pct:g}% of its mean; at least"
        f" {plan.min_repetitions}, at most {plan.max_repetitions} repetitions, and no round"
        f" that would take its measured time past {plan.budget_s:g} s"
        f" ({test_cases} test cases; measured time counts each cell from start to finish,"
        f" warm-ups and provisioning come on top)"
    )
