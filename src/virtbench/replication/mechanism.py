"""What a finding's mechanism looked like in the run: the measured facts behind a ratio that
does not reproduce, read from the run's own samples, never typed by hand (issue 38).

Each scenario kind has the facts that tell its analogue apart from the paper's:

- `idle-neighbours`: what the idle neighbours used, and what the target's CPU bought alone and
  beside them (CPU per request, how it slept and was preempted, its budget's weight);
- `different`: what the neighbour of the other size moved (Gbit/s) with how much CPU: the
  paper's large-file neighbour was bound by its NIC, leaving the CPU to the small-file one;
- `heterogeneous`: each guest's back-end CPU beside the other: Xen's HVM and PV guests used
  different Dom0 paths (qemu-dm, netback), QEMU's do not;
- `weights`: where the driver-domain weight went, and what the back ends used under each.

A value is taken per cell at the target's headline point (a sweep's peak step, else the
served size), then averaged over the cells, so it is the CPU behind the figure compared."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from .. import labelkeys
from ..analysis.colocation import BESIDE_LABEL
from ..results import PEAK_LIMIT_LABEL
from ..results import SOLO_PEAK_SCENARIO as SOLO_PEAK
from .model import Finding, Side

if TYPE_CHECKING:
    from ..report.data import ReportData

STEP, PEAK_STEP = "step", "peak_step"


def explain(data: ReportData, f: Finding, platform: str, test: str) -> str:
    """The measured mechanism of `f` in this run ("" when nothing applies or was stored)."""
    assert f.x is not None and f.base is not None
    kind = f.x.scenario.split(":", 1)[0]
    read = _Reader(data, test, dict(f.dims))
    if kind == "idle-neighbours":
        return _idle(read, platform, f.x.scenario, f.base.scenario)
    if kind == "different":
        return _different(read, platform, f.x.scenario, f.base.scenario)
    if kind == "heterogeneous":
        return _heterogeneous(read, platform, f.x.scenario, f.base)
    if kind == "weights":
        return _weights(read, platform, f.x.scenario, f.base.scenario)
    return ""


class _Reader:
    """Per-cell values of one test case's samples at the finding's served point."""

    def __init__(self, data: ReportData, test: str, dims: dict[str, Any]) -> None:
        self.data, self.test, self.dims = data, test, dims
        self.rows: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in data.samples:
            if r["test_case"] == test and r["valid"]:
                self.rows[(r["platform"], r["scenario"])].append(r)
        self.primary = next(
            (m.metric for m in data.description.metrics if m.test_case == test and m.primary),
            "",
        )

    def _at_point(self, r: dict[str, Any]) -> bool:
        return all(_same(r["labels"].get(k), v) for k, v in self.dims.items())

    def _peak_steps(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """cell -> the step of the target's headline (a sweep's peak), where it says one."""
        return {
            r["cell_id"]: r["labels"][PEAK_STEP]
            for r in rows
            if r["role"] == "target"
            and r["metric"] == self.primary
            and self._at_point(r)
            and r["labels"].get(PEAK_STEP) is not None
        }

    def values(
        self,
        platform: str,
        scenario: str,
        metric: str,
        role: str = "target",
        where: dict[str, Any] | None = None,
    ) -> list[float]:
        """One value per cell: `role`'s `metric` at the served point (at the target's peak
        step where the samples are per step: a neighbour's are cut by the target's points),
        of the samples whose labels hold `where`."""
        rows = self.rows.get((platform, scenario), [])
        steps = self._peak_steps(rows)
        per_cell: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r["role"] != role or r["metric"] != metric or not self._at_point(r):
                continue
            lab = r["labels"]
            if where and any(not _same(lab.get(k), v) for k, v in where.items()):
                continue
            if STEP in lab and r["cell_id"] in steps and not _same(lab[STEP], steps[r["cell_id"]]):
                continue
            per_cell[r["cell_id"]].append(r["value"])
        return [statistics.fmean(v) for v in per_cell.values()]

    def mean(self, platform: str, scenario: str, metric: str, **kw: Any) -> float | None:
        vals = self.values(platform, scenario, metric, **kw)
        return statistics.fmean(vals) if vals else None

    def beside(self, platform: str, scenario: str, role: str, size: float) -> float | None:
        """The mean headline of `role` serving `size` in the runs it made beside the target's
        point: a `different:SIZE` neighbour runs once beside each of the target's sizes
        (analysis/colocation.beside_targets pairs them; the groups carry the pairing)."""
        here = self.dims.get(labelkeys.FILE_SIZE_KB)
        for g in self.data.groups:
            k = g.key
            if (k.platform, k.test_case, k.scenario, k.role) != (
                platform,
                self.test,
                scenario,
                role,
            ):
                continue
            if k.metric != self.primary or not _same(k.dim(labelkeys.FILE_SIZE_KB), size):
                continue
            if here is None or _same(k.dim(BESIDE_LABEL), here):
                return g.summary.mean
        return None

    def neighbours(self, platform: str, scenario: str) -> list[str]:
        rows = self.rows.get((platform, scenario), [])
        return sorted({r["role"] for r in rows if r["role"].startswith("neighbour-")})

    def label(self, platform: str, scenario: str, key: str) -> str:
        """The distinct values of a label on the target's samples of these cells."""
        seen = {
            str(r["labels"][key])
            for r in self.rows.get((platform, scenario), [])
            if r["role"] == "target" and r["labels"].get(key) is not None
        }
        return " / ".join(sorted(seen))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return a is not None and str(a) == str(b)


def _n(v: float | None, fmt: str = ",.0f") -> str:
    return "?" if v is None else format(v, fmt)


def _per_request(cpu_pct: float | None, rate: float | None) -> float | None:
    """µs of CPU per request from a CPU % of one CPU and requests/s."""
    if cpu_pct is None or not rate:
        return None
    return cpu_pct / 100.0 * 1e6 / rate


def _idle(read: _Reader, platform: str, x: str, base: str) -> str:
    neighbours = read.neighbours(platform, x)
    used = [read.mean(platform, x, "cpu_util", role=r) for r in neighbours]
    used_ok = [u for u in used if u is not None]
    cpu = {s: read.mean(platform, s, "cpu_util") for s in (x, base)}
    rate = {s: read.mean(platform, s, read.primary) for s in (x, base)}
    if cpu[x] is None or cpu[base] is None:
        return ""
    per = {s: _per_request(cpu[s], rate[s]) for s in (x, base)}
    parts = []
    if used_ok:
        parts.append(
            f"the {len(used_ok)} idle neighbours used {min(used_ok):.1f}-{max(used_ok):.1f} % CPU"
        )
    parts.append(
        f"the target used {cpu[x]:.1f} % CPU beside them (alone {cpu[base]:.1f} %) for "
        f"{_n(rate[x])} req/s (alone {_n(rate[base])}): {_n(per[x], '.0f')} vs "
        f"{_n(per[base], '.0f')} µs CPU per request"
    )
    vol = {s: read.mean(platform, s, "vol_switches_per_s") for s in (x, base)}
    invol = {s: read.mean(platform, s, "invol_switches_per_s") for s in (x, base)}
    if None not in (*vol.values(), *invol.values()):
        parts.append(
            f"it slept {_n(vol[x])}/s (alone {_n(vol[base])}/s) and was preempted "
            f"{_n(invol[x])}/s (alone {_n(invol[base])}/s)"
        )
    weight = {s: read.label(platform, s, labelkeys.CPU_BUDGET_WEIGHT) for s in (x, base)}
    if weight[x] and weight[base]:
        parts.append(f"its budget weighed {weight[x]} beside them (alone {weight[base]})")
    elif read.label(platform, x, "cpu_budget").startswith("shared"):
        n = len(neighbours) + 1
        parts.append(
            f"stored before budgets recorded their weight: then {n} environments' default "
            "weights, the idle ones' lent to the target (cgroups.idle_weight)"
        )
    budget = _budget_pct(read.label(platform, x, "cpu_budget"))
    if budget is not None:  # a target at its budget both ways was CPU bound, not link bound
        parts.append(f"its CPU budget: {budget:.0f} % of one CPU")
    warm = _warm_alone(read, platform, base, rate[x])
    if warm:
        parts.append(warm)
    return "measured here: " + "; ".join(parts)


def _warm_alone(read: _Reader, platform: str, base: str, beside: float | None) -> str:
    """A solo cell that ran first on a freshly provisioned target with no warm-up (a TCG
    guest translates its code then: docs/colocation.md "Cold neighbours") against the same
    target alone measured later in the run (its solo-peak cells, same budget)."""
    budget = read.label(platform, base, "cpu_budget")
    if not budget.startswith("shared:") or "/" not in budget:
        return ""
    quota, period = budget.split(":", 1)[1].split("/", 1)
    limit = {PEAK_LIMIT_LABEL: f"cpu quota {quota} {period}"}  # alone in the same budget
    warm = read.mean(platform, SOLO_PEAK, read.primary, where=limit)
    cells = [c for c in read.data.cells if c.platform == platform and c.scenario != SOLO_PEAK]
    if warm is None or beside is None or not cells or read.data.settings.get("warmup"):
        return ""
    first = min(cells, key=lambda c: c.seq)
    if first.scenario != base:
        return ""
    return (
        f"the {base} cell ran first after its target was provisioned, with no warm-up: the "
        f"same target alone later in the run (solo-peak cells, same budget) served "
        f"{warm:,.0f} req/s, and beside the idle neighbours {beside / warm:.2f} of that"
    )


def _budget_pct(label: str) -> float | None:
    """ "shared:50000/100000" -> 50.0 (% of one CPU); None for anything else."""
    if not label.startswith("shared:"):
        return None
    try:
        quota, period = (float(v) for v in label.split(":", 1)[1].split("/"))
    except ValueError:
        return None
    return 100.0 * quota / period if period > 0 else None


def _different(read: _Reader, platform: str, x: str, base: str) -> str:
    size = x.split(":")[1] if ":" in x else ""
    try:
        kb = float(size)
    except ValueError:
        return ""
    rate = read.beside(platform, x, "neighbour-1", kb)
    cpu = read.mean(platform, x, "cpu_util", role="neighbour-1")
    cpu_same = read.mean(platform, base, "cpu_util", role="neighbour-1")
    target_cpu = {s: read.mean(platform, s, "cpu_util") for s in (x, base)}
    if rate is None:
        return ""
    gbit = rate * kb * 1024 * 8 / 1e9
    out = (
        f"measured here: the {kb:g} KB neighbour served {rate:,.0f} req/s = {gbit:.2f} Gbit/s "
        "over the host bridge (no NIC limit)"
    )
    if cpu is not None and cpu_same is not None:
        out += f" using {cpu:.1f} % CPU (the same-size neighbour {cpu_same:.1f} %)"
    if None not in target_cpu.values():
        out += (
            f"; the target used {target_cpu[x]:.1f} % CPU beside it (beside the same size "
            f"{target_cpu[base]:.1f} %): both neighbours took their share of the one budget"
        )
    return out


def _heterogeneous(read: _Reader, platform: str, x: str, base: Side) -> str:
    base_platform = base.platform or platform
    parts = []
    for plat, scenario, what in (
        (platform, x, "the mixed pair"),
        (base_platform, base.scenario, f"the {base_platform} pair"),
    ):
        be = [read.mean(plat, scenario, "backend_cpu_util", role=r) for r in base.roles]
        cpu = [read.mean(plat, scenario, "cpu_util", role=r) for r in base.roles]
        if None in be or None in cpu:
            continue
        parts.append(
            f"{what}: back ends {' + '.join(f'{b:.1f}' for b in be)} % of "
            f"{' + '.join(f'{c:.1f}' for c in cpu)} % CPU"
        )
    if not parts:
        return ""
    return (
        "measured here (QEMU's e1000 and virtio back ends both run in QEMU threads inside the "
        "one budget, not in two Dom0 paths): " + "; ".join(parts)
    )


def _weights(read: _Reader, platform: str, x: str, base: str) -> str:
    """What the back ends used under each weight against the share the weight entitled them
    to when every thread wanted the CPU: a weight the back ends never reached decided
    nothing (Xen's Dom0 was busy on every packet; QEMU's back ends under TCG are not)."""
    applied = {s: read.label(platform, s, "host_weight_applied_to") for s in (x, base)}
    if any(a.startswith("nothing") for a in applied.values()):
        return ""  # compute.py says it: not comparable
    roles = ("target", "neighbour-1")
    parts = []
    for s in (x, base):
        be = [read.mean(platform, s, "backend_cpu_util", role=r) for r in roles]
        vcpu = [read.mean(platform, s, "vcpu_cpu_util", role=r) for r in roles]
        if None in be:
            continue
        text = f"{s}: back ends {sum(be):.1f} % CPU"  # type: ignore[arg-type]
        share = _entitled(s)
        if share is not None:
            text += f" (their weight's share of the shared CPU {share:.0f} %)"
        if None not in vcpu:
            text += f", vCPUs {sum(vcpu):.1f} %"  # type: ignore[arg-type]
        parts.append(text)
    return ("measured here: " + "; ".join(parts)) if parts else ""


def _entitled(scenario: str) -> float | None:
    """weights:A:B:C -> A's share of one CPU in % when the back ends and both guests want it."""
    try:
        a, b, c = (float(v) for v in scenario.split(":")[1:4])
    except ValueError:
        return None
    return 100.0 * a / (a + b + c)


def unweighted(read_data: ReportData, f: Finding, platform: str, test: str) -> str:
    """Why a back-end weight finding cannot be judged on this platform: the cells say the
    driver-domain weight went nowhere (a container's network work is softirq work, charged
    to whatever task the CPU ran; on cgroup v2 one process's threads cannot be split)."""
    assert f.x is not None and f.base is not None
    read = _Reader(read_data, test, dict(f.dims))
    for s in (f.x.scenario, f.base.scenario):
        applied = read.label(platform, s, "host_weight_applied_to")
        if applied.startswith("nothing"):
            return (
                f"not comparable: the back-end weight of {s} was applied to {applied}; the "
                "paper's Dom0 weight has no analogue on this platform (a VM's QEMU back-end "
                "threads can be weighted: run the finding on vm-virtio)"
            )
    return ""
