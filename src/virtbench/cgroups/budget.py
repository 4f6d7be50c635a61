"""One CPU budget that several environments share: a vb- group carrying a CFS quota, each
environment's own group a child of it.

Why: a co-location cell models tenants on one host, whose capacity for tenants is fixed. If
each environment got its own `cpu_quota_us` (the shipped campaigns give a server half a CPU
so that the solo baseline is server-limited on a 2-core host), a pair would get twice the
solo's CPU and never contend, unlike seed 000/003's VMs sharing one machine. Inside a
budget, the pair divides what one environment had alone (docs/colocation.md).

    budget = CpuBudget.create(50_000, 100_000)       # vb-xxxxxx-cpu, claimed by this process
    Cgroup.create(budget.child("vb-abcdef"))         # an environment's group inside it
    budget.facts()                                   # BudgetFacts("shared", 50000, 100000)
    budget.destroy()                                 # also after a crash: the cgroups cleaner

An environment inside a budget has no quota of its own (the budget is its quota) and no
real-time bandwidth (the budget group holds none to give). The group is named with
NAME_PREFIX under the `virtbench` parent, so the registered cgroups cleaner removes it (and
everything inside) after a crash; it is claimed while its run lives.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from .. import cleanup, labelkeys
from ..cpubudget import SHARED, BudgetFacts
from ..naming import NAME_PREFIX
from .group import Cgroup
from .layout import Layout, read

DEFAULT_PERIOD_US = 100_000


class CpuBudget:
    def __init__(self, group: Cgroup, quota_us: int, period_us: int) -> None:
        self.group = group
        self.quota_us = quota_us
        self.period_us = period_us

    @classmethod
    def create(
        cls, quota_us: int, period_us: int | None = None, layout: Layout | None = None
    ) -> CpuBudget:
        name = f"{NAME_PREFIX}{secrets.token_hex(3)}-cpu"
        period = period_us or DEFAULT_PERIOD_US
        cleanup.claim(name)  # a concurrent `virtbench cleanup` spares it while we run
        try:
            group = Cgroup.create(name, cpu_quota_us=quota_us, cpu_period_us=period, layout=layout)
        except BaseException:
            cleanup.release(name)
            raise
        return cls(group, quota_us, period)

    @property
    def name(self) -> str:
        return self.group.name

    def child(self, instance: str) -> str:
        """The cgroup name (under the virtbench parent) of an environment inside the budget."""
        return f"{self.name}/{instance}"

    def facts(self) -> BudgetFacts:
        """What every sample measured inside it states (`BudgetFacts.labels()`)."""
        return BudgetFacts(SHARED, self.quota_us, self.period_us)

    def _dir(self) -> Path:
        paths = self.group.paths()
        return Path(paths.get("cpu") or paths["unified"])

    def holds(self, cgroups: dict[str, str]) -> bool:
        """Whether an environment's cgroups (`Accounting.cgroups`) are inside the budget."""
        own = cgroups.get("cpu") or cgroups.get("unified")
        return own is not None and Path(own).parent == self._dir()

    def members(self) -> list[str]:
        """Names of the environment groups inside it now."""
        d = self._dir()
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir() if p.is_dir() and p.name.startswith(NAME_PREFIX))

    def throttled(self) -> dict[str, int]:
        """The budget's cpu.stat (nr_periods, nr_throttled, throttled time)."""
        return self.group.cpu_stat()

    def weight(self) -> str:
        """The budget's weight against the host's other tasks now (v1 `cpu.shares`, v2
        `cpu.weight`, as "cpu.shares 1024"); "" if unreadable."""
        d = self._dir()
        for fname in ("cpu.shares", "cpu.weight"):
            if (d / fname).exists():
                try:
                    return f"{fname} {read(d / fname)}"
                except OSError:
                    return ""
        return ""

    def quota_in_effect(self) -> str:
        """The quota the kernel holds now (tests, messages)."""
        d = self._dir()
        if (d / "cpu.max").exists():
            return read(d / "cpu.max")
        return f"{read(d / 'cpu.cfs_quota_us')} {read(d / 'cpu.cfs_period_us')}"

    def destroy(self) -> None:
        """Remove the group and whatever is still inside it; idempotent."""
        try:
            self.group.destroy()
        finally:
            cleanup.release(self.name)


class ThrottleCount:
    """How often a budget ran out from this object's making to labels() (its cpu.stat): the
    evidence that its environments contended for it, or that a solo filled it alone; and
    what it weighed against the host's other tasks (`cpu_budget_weight`), which a solo's and
    a co-location cell's budget must share for their ratio to be the neighbours' cost."""

    def __init__(self, budget: CpuBudget | None) -> None:
        self.budget = budget
        self.before = budget.throttled() if budget is not None else {}

    def labels(self) -> dict[str, str]:
        if self.budget is None or not self.before:
            return {}
        after = self.budget.throttled()
        periods = after.get("nr_periods", 0) - self.before.get("nr_periods", 0)
        throttled = after.get("nr_throttled", 0) - self.before.get("nr_throttled", 0)
        out: dict[str, Any] = {labelkeys.CPU_BUDGET_THROTTLED: f"{throttled}/{periods} periods"}
        # its weight against the host's tasks, read at the end (idle neighbours lend none)
        weight = self.budget.weight()
        if weight:
            out[labelkeys.CPU_BUDGET_WEIGHT] = weight
        return out
