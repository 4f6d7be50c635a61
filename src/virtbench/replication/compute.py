"""Each finding's quantity from a stored run, with its interval and verdict.

Reads the run only (a `ReportData`: groups, cells, samples, host facts, scores), like
`analysis/`. Every ratio and interval comes from `analysis/ratios.py` (paired over the run's
rounds) and is judged by `ratios.judge` with the run's floors: there is no second method."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .. import cpubudget, labelkeys
from ..analysis import ratios, stalls
from ..analysis.floors import floor_function
from ..analysis.groups import Group
from ..analysis.ratios import Ratio, Verdict
from ..analysis.scores import GeoMean
from . import mechanism, natpath
from .model import (
    AGGREGATE,
    HOST_WEIGHT,
    HW_ACCEL,
    HYPERVISOR,
    MAX_RATIO,
    SUITE_SCORE,
    Finding,
    Side,
)
from .verdict import NOT_COMPARABLE, NOT_MEASURED, pct, replicate

if TYPE_CHECKING:
    from ..report.data import ReportData


@dataclass(frozen=True)
class Result:
    finding: Finding
    run_id: str
    verdict: str
    reason: str
    platform: str | None = None
    ratio: Ratio | None = None
    judged: Verdict | None = None
    cells: str = ""  # what was divided by what, for the reader to find the cells
    method: str = ""  # how the interval was made ('' = the ratio's own)

    def as_dict(self) -> dict[str, Any]:
        f, r = self.finding, self.ratio
        return {
            "seed": f.seed,
            "finding": f.id,
            "figure": f.figure,
            "what": f.what,
            "paper": f.paper,
            "paper_text": f.paper_text,
            "band": list(f.band),
            "analogue": f.analogue,
            "run_id": self.run_id,
            "platform": self.platform,
            "cells": self.cells,
            "value": None if r is None else r.value,
            "low": None if r is None else r.low,
            "high": None if r is None else r.high,
            "n": None if r is None else r.n,
            "method": self.method or (None if r is None else r.method),
            "judged": None if self.judged is None else self.judged.outcome,
            "verdict": self.verdict,
            "reason": self.reason,
        }


def evaluate(data: ReportData, findings: tuple[Finding, ...]) -> list[Result]:
    floors = floor_function(data.groups, data.baseline, data.host)
    return [_evaluate(data, f, floors) for f in findings]


def _evaluate(data: ReportData, f: Finding, floors) -> Result:
    missing = Result(f, data.run_id, NOT_MEASURED, "")
    host = _other_host(data, f)  # a finding about another hypervisor: before any platform
    if host:
        return Result(f, data.run_id, NOT_COMPARABLE, host)
    platform = _first(f.platforms, data.platforms)
    if platform is None:
        why = f"no platform {' / '.join(f.platforms)} in this run ({', '.join(data.platforms)})"
        return _with(missing, why)
    blocked = _not_comparable(data, f, platform)
    if blocked:
        return Result(f, data.run_id, NOT_COMPARABLE, blocked, platform)
    if f.quantity == SUITE_SCORE:
        return _suite_score(data, f, platform)
    test = _first(f.test_cases, {g.key.test_case for g in data.groups})
    if test is None:
        return _with(missing, f"no test case {' / '.join(f.test_cases)} in this run", platform)
    x, b, cells = _sides(data, f, platform, test)
    if isinstance(x, str) or isinstance(b, str):
        why = x if isinstance(x, str) else b
        return Result(f, data.run_id, NOT_MEASURED, str(why), platform, cells=cells)
    r = ratios.ratio(x[0], b[0], paired=True)
    if r is None:
        return Result(
            f,
            data.run_id,
            NOT_MEASURED,
            "no ratio: a mean is zero or missing",
            platform,
            cells=cells,
        )
    floor, source = floors(x[1].key)
    judged = ratios.judge(r, floor, source)
    if f.quantity == MAX_RATIO:
        stall = stalls.one_stall(x[1]) or stalls.one_stall(b[1])
        if stall:
            why = f"undecided, a maximum driven by one stall ({stall}): here {pct(r.value)}"
            return Result(f, data.run_id, NOT_MEASURED, why, platform, r, judged, cells)
    if HOST_WEIGHT in f.requires and (why := mechanism.unweighted(data, f, platform, test)):
        return Result(f, data.run_id, NOT_COMPARABLE, why, platform, r, judged, cells)
    verdict, reason = replicate(f, r, judged)
    link = _link(data, f, platform, test)
    measured = mechanism.explain(data, f, platform, test) if verdict != "reproduces" else ""
    nat = _nat(data, f, x[1].key.suite, platform, lambda d, f, p: measure(d, f, p, test))
    for extra in (_own_budget(x[1]), _own_budget(b[1]), link, measured, nat, f.note):
        if extra and verdict != "reproduces":
            reason += f"; {extra}"
    return Result(f, data.run_id, verdict, reason, platform, r, judged, cells)


def _sides(data: ReportData, f: Finding, platform: str, test: str) -> tuple[Any, Any, str]:
    """Both sides of a ratio or aggregate (each: per-round values and a group, or why not)
    and what was divided by what."""
    assert f.x is not None and f.base is not None
    x, x_what = _side(data, f, f.x, platform, test)
    b, b_what = _side(data, f, f.base, platform, test)
    return x, b, f"{test}: {x_what} / {b_what}"


def measure(data: ReportData, f: Finding, platform: str, test: str) -> Ratio | None:
    """x / base of `f` on `platform` and `test`, paired over the run's rounds, as a finding's
    quantity is; None when a side is missing (replication/curves.py: one point of a curve)."""
    x, b, _cells = _sides(data, f, platform, test)
    if isinstance(x, str) or isinstance(b, str):
        return None
    return ratios.ratio(x[0], b[0], paired=True)


def _nat(data: ReportData, f: Finding, suite: str, platform: str, figure) -> str:
    """How a NAT platform's client reached it, and the same quantity on the run's other NAT
    platforms (`figure(data, finding, platform)` -> Ratio | None): replication/natpath.py."""
    text = natpath.nat_path(data, suite, platform)
    if not text:
        return ""
    others = []
    for name, how in natpath.other_nats(data, platform).items():
        r = figure(data, replace(f, platforms=(name,)), name)
        if r is not None:
            ci = "" if r.low is None or r.high is None else f" ({pct(r.low)}..{pct(r.high)})"
            others.append(f"{name} through {how}: {pct(r.value)}{ci}")
    return text + ("; in the same run " + "; ".join(others) if others else "")


def _geo(data: ReportData, f: Finding, platform: str) -> GeoMean | None:
    """A suite-score finding's suite score of `platform` against the run's baseline."""
    assert f.x is not None
    want = (f.suite, platform, f.x.scenario)
    return next((g for g in data.geomeans if (g.suite, g.platform, g.scenario) == want), None)


def _score_of(data: ReportData, f: Finding, platform: str) -> Ratio | None:
    geo = _geo(data, f, platform)
    if geo is None or geo.value is None:
        return None
    return Ratio(geo.value, geo.low, geo.high, None, geo.n_tests, geo.low is not None)


def _link(data: ReportData, f: Finding, platform: str, test: str) -> str:
    """What the paper's network-bound size moved alone here, against the paper's link: a size
    bound by a 1 Gbit/s NIC there may be CPU bound on a host bridge, which has no such limit."""
    if f.link is None:
        return ""
    size, gbit = f.link
    solo = _group(data, platform, test, "solo", "target", f.metric, {"file_size_kb": size})
    if solo is None or solo.summary.mean is None:
        return f"the paper's {size:g} KB was bound by its {gbit:g} Gbit/s link; not measured here"
    moved = solo.summary.mean * size * 1024 * 8 / 1e9  # replies/s x KB -> Gbit/s
    bound = "above" if moved > gbit else "within"
    return (
        f"the paper's {size:g} KB was bound by its {gbit:g} Gbit/s link; here {platform} alone "
        f"served {solo.summary.mean:,.0f} req/s x {size:g} KB = {moved:.2f} Gbit/s, {bound} it"
    )


def _own_budget(g: Group) -> str:
    """A co-location cell whose environments each had their own CPU quota: a pair got twice
    the solo's CPU, where the paper's guests divided one machine (docs/colocation.md)."""
    budget = cpubudget.from_labels(g.labels)
    if g.key.scenario == "solo" or budget is None or budget.mode != cpubudget.OWN:
        return ""
    return (
        f"{g.key.platform} · {g.key.scenario} ran with its own CPU quota (cpu_budget = "
        f"{budget.text()}), not sharing the solo's budget with its neighbours"
    )


def _with(r: Result, reason: str, platform: str | None = None) -> Result:
    return Result(r.finding, r.run_id, r.verdict, reason, platform)


def _first(wanted: tuple[str, ...], present) -> str | None:
    return next((w for w in wanted if w in present), None)


def _not_comparable(data: ReportData, f: Finding, platform: str) -> str:
    """Why the host or the run cannot show this finding at all (from the run's facts)."""
    for req in f.requires:
        if req == HW_ACCEL:
            accel = _accel(data, f, platform)
            if accel and all(a != "kvm" for a in accel.values()):
                used = ", ".join(f"{p} accel={a}" for p, a in sorted(accel.items()))
                return (
                    f"not comparable: TCG, no hardware-assisted guest ({used}; host kvm: "
                    f"{data.host.get('kvm', '?')}); the paper's guests ran hardware-assisted"
                )
    return ""


def _other_host(data: ReportData, f: Finding) -> str:
    """Why a finding about one hypervisor (ESXi, Hyper-V, Xen) does not apply to this host."""
    for req in f.requires:
        if req.startswith(HYPERVISOR):
            want = req[len(HYPERVISOR) :]
            have = str(data.host.get("hypervisor") or data.host.get("virtualization") or "none")
            if have.lower() != want.lower():
                return (
                    f"not comparable: the finding is about {want}; this host's hypervisor is "
                    f"{have!r} (host facts); {f.analogue}"
                )
    return ""


def _accel(data: ReportData, f: Finding, platform: str) -> dict[str, str]:
    """platform -> accel used, for the VMs the finding reads (a container on a VM: its VM)."""
    labels = data.platform_labels()
    names = {platform} | {s.platform for s in (f.x, f.base) if s is not None and s.platform}
    out: dict[str, str] = {}
    for name in names:
        lab = labels.get(name) or {}
        accel = lab.get(labelkeys.ACCEL_USED) or (
            labels.get(lab.get(labelkeys.HOST) or "") or {}
        ).get(labelkeys.ACCEL_USED)
        if accel:
            out[name] = str(accel)
    return out


def _side(
    data: ReportData, f: Finding, side: Side, platform: str, test: str
) -> tuple[tuple[dict[int, float], Group] | str, str]:
    """The side's per-round values (a sum over its roles) and its first group, or why not."""
    plat = side.platform or platform
    dims = dict(f.dims) | dict(side.dims)
    what = f"{plat} · {side.scenario} · {'+'.join(side.roles)}" + (
        f" [{', '.join(f'{k}={v}' for k, v in sorted(dims.items()))}]" if dims else ""
    )
    found: list[Group] = []
    for role in side.roles:
        best = _fewest(data, plat, test, side.scenario, role, f.metric, dims)
        if len(best) > 1:
            split = sorted({k for g in best for k, _v in g.key.dims} - set(dims))
            return (
                f"{test}'s {what} ({role}) results are split by {', '.join(split)}"
                f" ({len(best)} groups): the finding names none of its values",
                what,
            )
        if not best:
            return f"no valid {f.metric or 'primary'} result for {what} ({role})", what
        g = best[0]
        found.append(g)
    per = [ratios.per_round(g.values, g.repetitions) for g in found]
    if f.quantity == AGGREGATE or len(per) > 1:
        rounds = set.intersection(*(set(p) for p in per))
        summed = {r: sum(p[r] for p in per) for r in sorted(rounds)}
        if not summed:
            return f"{what}: its roles share no round", what
        return (summed, found[0]), what
    return (per[0], found[0]), what


def _group(
    data: ReportData,
    platform: str,
    test: str,
    scenario: str,
    role: str,
    metric: str,
    dims: dict[str, Any],
) -> Group | None:
    """The group with these labels (its other dims as few as possible), valid values only;
    None also when several are left (see `_fewest`)."""
    best = _fewest(data, platform, test, scenario, role, metric, dims)
    return best[0] if len(best) == 1 else None


def _fewest(
    data: ReportData,
    platform: str,
    test: str,
    scenario: str,
    role: str,
    metric: str,
    dims: dict[str, Any],
) -> list[Group]:
    """The groups with these labels and the fewest other dims. More than one (mbw's three
    copy methods) means the finding names no value of a dimension: picking one would be
    arbitrary."""
    candidates = [
        g
        for g in data.groups
        if g.key.platform == platform
        and g.key.test_case == test
        and g.key.scenario == scenario
        and g.key.role == role
        and (g.key.metric == metric if metric else g.primary)
        and all(
            _eq(g.key.dim(k) if g.key.dim(k) is not None else g.labels.get(k), v)
            for k, v in dims.items()
        )
        and g.values
    ]
    fewest = min((len(g.key.dims) for g in candidates), default=0)
    return [g for g in candidates if len(g.key.dims) == fewest]


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return a is not None and str(a) == str(b)


def _suite_score(data: ReportData, f: Finding, platform: str) -> Result:
    """The suite's score against the run's baseline (analysis/scores.geomeans: the weighted
    geometric mean of oriented ratios, > 1 = better), only over the test cases both have."""
    assert f.x is not None
    geo = _geo(data, f, platform)
    cells = f"{f.suite} score: {platform} · {f.x.scenario} / {data.baseline}"
    if geo is None or geo.value is None or geo.verdict is None:
        why = f"no {f.suite} score of {platform} against the baseline {data.baseline}"
        return Result(f, data.run_id, NOT_MEASURED, why, platform, cells=cells)
    r = _score_of(data, f, platform)
    assert r is not None
    method = f"suite score over {geo.n_tests} test cases (analysis/scores.geomeans)"
    verdict, reason = replicate(f, r, geo.verdict)
    if geo.missing:
        # seed 004 totals side by side only over the same test set: say which are left out
        reason += f"; over {geo.n_tests} test cases: {', '.join(geo.missing)} left out (no ratio)"
    for extra in (_nat(data, f, f.suite, platform, _score_of), f.note):
        if extra and verdict != "reproduces":
            reason += f"; {extra}"
    return Result(f, data.run_id, verdict, reason, platform, r, geo.verdict, cells, method)
