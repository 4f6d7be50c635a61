"""The CPU budget a cell's environments ran in, as one structured value: what the runner made
(cgroups/budget.py), what the samples say (labels) and what analysis reads back.

Ground level (imports nothing of virtbench), so producers, analysis and report share it.
A sample states its budget in separate label keys, never as text to be parsed:

    cpu_budget            "shared" | "own" | "none" | "lifted"
    cpu_budget_quota_us   the budget's CFS quota (shared, lifted)
    cpu_budget_period_us  its period
    cpu_budget_note       why an "own" budget could not be shared (a quota inside a VM guest)

Stores written before this form hold one text instead ("shared:50000/100000",
"lifted:50000/100000", "own: cpu_quota_us = ... inside its VM ..."): `from_labels` is the
one place that reads it (docs/colocation.md "One CPU budget per cell").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import labelkeys

SHARED, OWN, NONE, LIFTED = "shared", "own", "none", "lifted"
MODES = (SHARED, OWN)  # what [campaign] cpu_budget may say
# the labels a budget is stated in
KEYS = (
    labelkeys.CPU_BUDGET,
    labelkeys.CPU_BUDGET_QUOTA_US,
    labelkeys.CPU_BUDGET_PERIOD_US,
    labelkeys.CPU_BUDGET_NOTE,
)


@dataclass(frozen=True)
class BudgetFacts:
    """`mode`: shared (one quota the cell's environments divide), own (each its own quota),
    none (the target has no host-side quota), lifted (a weights cell's, lifted for its scene)."""

    mode: str
    quota_us: int | None = None
    period_us: int | None = None
    note: str | None = None

    @property
    def shared(self) -> bool:
        return self.mode == SHARED

    def quota(self) -> tuple[int, int] | None:
        """(quota µs, period µs) of a shared or lifted budget; None: no such budget."""
        if self.quota_us is None or self.period_us is None:
            return None
        return self.quota_us, self.period_us

    def text(self) -> str:
        """How messages name it: "shared:50000/100000", "own", "own: <note>", "none"."""
        if (quota := self.quota()) is not None:
            return f"{self.mode}:{quota[0]}/{quota[1]}"
        return f"{self.mode}: {self.note}" if self.note else self.mode

    def labels(self) -> dict[str, Any]:
        """The label keys a sample (or a platform's facts) states it with."""
        out: dict[str, Any] = {labelkeys.CPU_BUDGET: self.mode}
        if self.quota_us is not None:
            out[labelkeys.CPU_BUDGET_QUOTA_US] = self.quota_us
        if self.period_us is not None:
            out[labelkeys.CPU_BUDGET_PERIOD_US] = self.period_us
        if self.note is not None:
            out[labelkeys.CPU_BUDGET_NOTE] = self.note
        return out


def from_labels(labels: dict[str, Any]) -> BudgetFacts | None:
    """The budget a sample's labels state (None: they say nothing), in either form."""
    said = labels.get(labelkeys.CPU_BUDGET)
    if not isinstance(said, str):
        return None
    if (
        labelkeys.CPU_BUDGET_QUOTA_US in labels
        or labelkeys.CPU_BUDGET_NOTE in labels
        or said in (SHARED, OWN, NONE, LIFTED)
    ):
        quota = _int(labels.get(labelkeys.CPU_BUDGET_QUOTA_US))
        period = _int(labels.get(labelkeys.CPU_BUDGET_PERIOD_US))
        return BudgetFacts(said, quota, period, labels.get(labelkeys.CPU_BUDGET_NOTE))
    return _legacy(said)


def _legacy(said: str) -> BudgetFacts:
    """A budget stored as one text by virtbench before the structured keys (compat only)."""
    mode, sep, rest = said.partition(":")
    if mode in (SHARED, LIFTED) and sep:
        quota, _, period = rest.partition("/")
        return BudgetFacts(mode, _int(quota), _int(period))
    if mode == OWN and sep:
        return BudgetFacts(OWN, note=rest.strip())
    return BudgetFacts(mode)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
