"""The co-location engine: a target plus neighbour environments, started in a defined order,
run over one time window, sampled once a second, torn down in reverse order.

A scenario (scenarios/colocation.py) only builds a list of `EnvPlan`s; this module does the
rest: the neighbours' environments come from the neighbour layer (neighbours.py: memory
check before anything starts, provisioning in order, a neighbour that fails to start fails
the cell and tears down what was started), then CPU weights, rates as a % of each
environment's solo peak (rates.py), concurrent runs, window coverage, sampling and role naming.
Sampling is the cell's one sampler (the runner's, `ScenarioEnv.sampler`): the engine opens a
window on it over the scene's roles, which reads them and the host in detail meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any

from .. import labelkeys
from ..cgroups import CpuBudget, ThrottleCount, idle_weight
from ..cpubudget import NONE, BudgetFacts
from ..drivers.sweep import Lockstep
from ..errors import VirtbenchError, WorkloadError
from ..metrics.sampler import Sampler, Span, Window, summary_samples
from ..platforms.base import Platform, PlatformSpec
from ..workloads.base import RunContext, Sample
from ..workloads.capabilities import StepsTogether
from . import weights as weights_mod
from .base import ScenarioEnv
from .colocation_placement import SharedCpu
from .neighbours import NeighbourPlan, Neighbours, idle
from .peaks import Peak
from .rates import apply_load, apply_schedule, schedule_param, size_param

MIN_COVERAGE = 0.95  # busy environments must overlap this much of each other's run...
# ...or miss at most this long: starting a command in a VM goes through its guest agent
# (start + status polling), which alone can be 5 % of a short run (docs/colocation.md)
COVERAGE_SLACK_S = 0.5
# longest wait at a lockstep barrier for a co-located environment (a TCG guest writing nginx's
# files before its first step, a step whose late requests run into httperf's timeout)
LOCKSTEP_TIMEOUT_S = 300.0


@dataclass
class EnvPlan:
    role: str  # "target" or "neighbour-N"
    spec: PlatformSpec | None = None  # None: the runner's target platform
    activity: str = "workload"  # "workload" (the cell's test case) or "idle"
    params: dict[str, Any] = field(default_factory=dict)  # overrides of the cell's params
    load_pct: float | None = None  # offered rate as % of this environment's solo peak
    cpu_weight: int | None = None  # cgroup v1 cpu.shares scale
    start_after_s: float | None = None  # start-up storm: provision this long after the target


@dataclass
class _Env:
    plan: EnvPlan
    platform: Platform | None  # None until a start-up storm newcomer is provisioned
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None
    cause: BaseException | None = None  # what raised it: a WorkloadTimeout makes the cell's
    # status "timeout" (runner/cell.timed_out follows __cause__)
    window: tuple[float, float] | None = None  # the workload's run() call
    marks: list[float] = field(default_factory=list)  # times it recorded series points
    points: list[Span] = field(default_factory=list)  # points it served (monotonic times)
    startup_s: float | None = None
    overlap: float | None = None  # share of the target's run this busy neighbour overlapped
    peak: Peak | None = None  # the solo peak its load=PCT rate was worked out from
    peaks: dict[str, Peak] = field(default_factory=dict)  # by size: its schedule's 100 %


def _ctx_for(
    env: ScenarioEnv,
    params: dict[str, Any],
    tag: str,
    marks: list[float] | None = None,
    placement: SharedCpu | None = None,
    points: list[Span] | None = None,
) -> RunContext:
    def record(metric: str, t: float, value: float, unit: str, role: str = "target") -> None:
        if marks is not None:
            marks.append(time.monotonic())  # when the workload reported a measured step
        env.ctx.series(metric, t, value, unit, tag if role == "target" else f"{role}:{tag}")

    def point(labels: dict[str, Any], start: float, end: float) -> None:
        if points is not None:
            points.append((dict(labels), start, end))

    ctx = replace(env.ctx, params=params, series=record, point=point)
    if placement is not None:  # every environment on the shared CPU, clients on the others
        ctx = replace(ctx, cpus=placement.env_cpus, client_cpus=placement.client_cpus)
    return ctx


def _params(env: ScenarioEnv, e: _Env, lockstep: bool) -> dict[str, Any]:
    params = dict(env.ctx.params) | e.plan.params
    if lockstep and e.plan.load_pct is None:  # a shared schedule of its own solo peak's shares
        params, e.peaks = apply_schedule(env, e.platform, params)  # type: ignore[arg-type]
        return params
    params, e.peak = apply_load(env, e.platform, params, e.plan.load_pct)  # type: ignore[arg-type]
    return params


def _lockstep(env: ScenarioEnv, busy: list[_Env]) -> Lockstep | None:
    """Busy environments of a workload that has steps (a sweep's rates, or one run per file
    size) go through them together."""
    if len(busy) < 2 or not isinstance(env.workload, StepsTogether):
        return None
    roles = [e.plan.role for e in busy]
    return Lockstep(roles, MIN_COVERAGE, COVERAGE_SLACK_S, LOCKSTEP_TIMEOUT_S)


def _label(samples: list[Sample], e: _Env, extra: dict[str, Any]) -> list[Sample]:
    for s in samples:
        if s.role == "client":
            s.labels[labelkeys.CLIENT_OF] = e.plan.role
        else:
            s.role = e.plan.role
        s.labels.update(extra)
        s.labels.setdefault(labelkeys.ENV_PLATFORM, e.platform.name)
    return samples


def _run_workload(
    env: ScenarioEnv,
    e: _Env,
    params: dict[str, Any],
    gate: threading.Barrier,
    lockstep: Lockstep | None,
    placement: SharedCpu | None = None,
) -> None:
    ctx = _ctx_for(env, params, e.plan.role, e.marks, placement, e.points)
    if ctx.remote is not None:  # every busy environment runs its clients there at once
        ctx = replace(ctx, remote=ctx.remote.shared_by(gate.parties))
    workload = type(env.workload)()
    with contextlib.suppress(threading.BrokenBarrierError):
        gate.wait(timeout=60)
    t0 = time.monotonic()
    try:
        if lockstep is not None and isinstance(workload, StepsTogether):
            e.samples = workload.run_together(e.platform, ctx, lockstep.party(e.plan.role))
        else:
            e.samples = workload.run(e.platform, ctx)
    except (WorkloadError, VirtbenchError) as exc:
        e.error, e.cause = str(exc), exc
        e.samples = list(getattr(exc, "samples", []))  # what it measured before: kept, flagged
    except Exception as exc:  # noqa: BLE001 - reported as this environment's failure
        e.error = f"internal error: {exc!r}"
    finally:
        e.window = (t0, time.monotonic())
        if lockstep is not None:  # the others stop waiting for its steps
            lockstep.abort()


def _overlap_s(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Seconds the two spans share."""
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def _coverage(target: tuple[float, float], other: tuple[float, float]) -> float:
    span = target[1] - target[0]
    if span <= 0:
        return 1.0
    return _overlap_s(target, other) / span


def _uncovered_s(measured: tuple[float, float], running: tuple[float, float]) -> float:
    """Seconds of a measured window outside the other environment's run."""
    return (measured[1] - measured[0]) - _overlap_s(measured, running)


def _measured(e: _Env) -> tuple[float, float] | None:
    """When the environment's workload measured: from one step before its first series point
    to its last (a sweep reports each step at its end), else its whole run() call. The run()
    call also holds set-up (writing files, starting nginx), which in a TCG guest takes seconds
    longer than on the host and must not count as measuring without the neighbour."""
    ends: list[float] = []
    for t in sorted(e.marks):
        if not ends or t - ends[-1] > 0.05:  # one step reports several series at once
            ends.append(t)
    if e.window is None or len(ends) < 2:
        return e.window
    step = min(b - a for a, b in zip(ends, ends[1:], strict=False))
    return (max(e.window[0], ends[0] - step), ends[-1])


def _overlap(target: _Env, e: _Env) -> tuple[float, float]:
    """(share, seconds) of either one's measured window during which the other was not
    running: each must have measured while the other ran."""
    pairs = [(_measured(target), e.window), (_measured(e), target.window)]
    shares, gaps = [], []
    for measured, running in pairs:
        if measured is None or running is None:
            continue
        shares.append(_coverage(measured, running))
        gaps.append(_uncovered_s(measured, running))
    return (min(shares, default=1.0), max(gaps, default=0.0))


def run(
    env: ScenarioEnv,
    plans: list[EnvPlan],
    what: str,
    labels: dict[str, Any],
    host_weight: int | None = None,
    placement: SharedCpu | None = None,
) -> list[Sample]:
    """Run one co-location cell; return samples of every role (target, neighbour-N, client).

    `host_weight` (cpu.shares scale) goes to the host-side back-end work that can be grouped
    (see scenarios/weights.py). `placement` pins every environment to one shared CPU and the
    load generators to the others (colocation_placement.py); it lifts each environment's own
    CFS quota for the cell (a shared budget stays: the weights divide it) and is recorded on
    every sample.

    A start-up storm runs once per served size: seed 003 Fig. 14 started the newcomers
    beside a 1 kB and beside a 70 kB target, each its own experiment. With one storm per
    cell, sizes served after the newcomers were ready measured the target after the storm."""
    sizes = _storm_sizes(env, plans)
    if len(sizes) < 2:
        return _scene(env, plans, what, labels, host_weight, placement)
    param = size_param(type(env.workload))
    out: list[Sample] = []
    for size in sizes:
        one = replace(env, ctx=replace(env.ctx, params=env.ctx.params | {param: [size]}))
        try:
            out += _scene(
                one, plans, what, labels | {"storm_per_size": True}, host_weight, placement
            )
        except WorkloadError as exc:  # the sizes measured before it go with the failure
            _finished_before(out, exc)
            raise WorkloadError(str(exc), samples=out + list(exc.samples)) from exc
        except VirtbenchError as exc:  # a later scene's set-up (memory check, a neighbour)
            if not out:  # nothing measured yet: the user-facing error as it was
                raise
            _finished_before(out, exc)
            raise WorkloadError(str(exc), samples=out) from exc
    return out


def _finished_before(samples: list[Sample], exc: BaseException) -> None:
    """The sizes before a failed one were experiments of their own (own neighbours, own
    storm, torn down): they stay valid, labelled with what failed after them."""
    lines = str(exc).strip().splitlines()
    for s in samples:
        s.labels[labelkeys.LATER_SCENE_FAILED] = lines[0][:200] if lines else "no error text"


def _storm_sizes(env: ScenarioEnv, plans: list[EnvPlan]) -> list[Any]:
    """The sizes a start-up cell serves one after another (one storm each); [] otherwise."""
    param = size_param(type(env.workload))
    value = env.ctx.params.get(param) if param else None
    if not any(p.start_after_s is not None for p in plans) or not isinstance(value, list):
        return []
    return list(dict.fromkeys(value))


def _scene(
    env: ScenarioEnv,
    plans: list[EnvPlan],
    what: str,
    labels: dict[str, Any],
    host_weight: int | None,
    placement: SharedCpu | None,
) -> list[Sample]:
    """One scene: the neighbours provisioned, the workloads run together, torn down."""
    if placement is None:  # a placement lifts the quota: that limit's peak is measured inside
        _target_peaks_first(env, plans)
    if placement is not None:
        labels = labels | placement.labels()
    budget = env.budget
    with ExitStack() as stack:
        group = stack.enter_context(
            Neighbours(
                env,
                _neighbour_plans(plans, placement, budget),
                what,
                settle_s=0,
                commands_on_enter=False,
            )
        )
        envs = [_Env(p, env.target if p.spec is None else _started(group, p.role)) for p in plans]
        weight_notes = weights_mod.apply(
            [(e.platform, e.plan.cpu_weight, e.plan.role) for e in envs if e.platform],
            host_weight,
            stack,
            lift_quotas=placement is not None,
            budget=budget,
        )
        active = [e for e in envs if e.plan.start_after_s is None]
        late = [e for e in envs if e.plan.start_after_s is not None]
        # idle neighbours lend the busy target no weight against the host's tasks
        stack.enter_context(idle_weight(_idle_groups(active)))
        target = next(e for e in envs if e.plan.role == "target")
        busy = [e for e in active if e.plan.activity == "workload"]
        lockstep = _lockstep(env, busy)
        scheduled = lockstep is not None and schedule_param(type(env.workload)) is not None
        params = {e.plan.role: _params(env, e, scheduled) for e in active}
        # idle neighbours start their sleeping process (they are part of the scene), then
        # every busy environment at once behind a barrier so all measure the same window
        # with the same duration; with steps, each step starts and ends together as well
        group.start_commands()
        gate = threading.Barrier(len(busy))
        threads = [
            threading.Thread(
                target=_run_workload,
                args=(env, e, params[e.plan.role], gate, lockstep, placement),
                daemon=True,
            )
            for e in busy
        ]
        # the cell's sampler reads every environment of the scene in detail meanwhile
        roles = {e.plan.role: e.platform for e in active}
        throttled = ThrottleCount(budget)
        with env.sampler.window(roles) as window:  # type: ignore[arg-type]
            storm = _Storm(group, late, env.sampler)
            for th in threads:
                th.start()
            storm.start()
            for th in threads:
                th.join()
            storm.join()
        # members now: start-up newcomers joined the budget during the scene
        labels = labels | _budget_labels(env) | throttled.labels()
        dead = group.exited()
        for e in envs:  # an idle neighbour whose process died was not there all along
            e.error = e.error or dead.get(e.plan.role)
        if lockstep is not None:  # each step was judged on its own window (its labels)
            labels = labels | {labelkeys.LOCKSTEP: True}
        out = _collect(
            envs, target, window, labels | weight_notes, params, env.sampler.t0, lockstep
        )
        if target.error:  # the cell fails; what was measured before goes with it (runner)
            raise WorkloadError(target.error, samples=out) from target.cause
        return out


def _idle_groups(envs: list[_Env]) -> list[str]:
    """The cpu (v2: unified) group directories of the scene's idle environments."""
    out = []
    for e in envs:
        if e.plan.activity == "idle" and e.platform is not None:
            own = e.platform.accounting().cgroups
            out.append(own.get("cpu") or own.get("unified") or "")
    return [d for d in out if d]


def _target_peaks_first(env: ScenarioEnv, plans: list[EnvPlan]) -> None:
    """Measure the target's solo peaks (the 100 % of its schedule or of load=PCT) before any
    neighbour exists, so they are solo: measured once the neighbours were up, a booted idle
    TCG guest beside it in the shared budget took its share of the CPU. The run keeps them
    (SoloPeaks), and an identical neighbour (same platform and budget) reads the same."""
    busy = [p for p in plans if p.activity == "workload" and p.start_after_s is None]
    target = next((p for p in busy if p.role == "target"), None)
    if target is not None:
        scheduled = len(busy) > 1 and schedule_param(type(env.workload)) is not None
        _params(env, _Env(target, env.target), scheduled)


def _neighbour_plans(
    plans: list[EnvPlan], placement: SharedCpu | None = None, budget: CpuBudget | None = None
) -> list[NeighbourPlan]:
    """What the neighbour layer provisions: every environment but the runner's target.

    Busy neighbours get no command (their workload runs in them later); storm newcomers are
    deferred and, as before, keep no sleeping process (their start-up time is what counts).
    With the target's shared CPU budget, every neighbour (idle, busy, newcomer) is made
    inside it: the cell's environments divide what the target had alone."""
    return [
        NeighbourPlan(
            p.role,
            p.spec,
            argv=idle if p.activity == "idle" and p.start_after_s is None else None,
            deferred=p.start_after_s is not None,
            cpus=placement.env_cpus if placement is not None else None,
            budget=budget,
        )
        for p in plans
        if p.spec is not None
    ]


def _budget_labels(env: ScenarioEnv) -> dict[str, Any]:
    """The cell's CPU budget (cpubudget.py): the shared budget with its members, "own" (each
    environment its own quota) or "none" (the target has no host-side quota). A weights cell
    keeps the shared budget: the pair's weights split it (docs/colocation.md)."""
    budget = env.budget
    if budget is None:
        return (env.budget_facts or BudgetFacts(NONE)).labels()
    return budget.facts().labels() | {labelkeys.CPU_BUDGET_MEMBERS: budget.members()}


def _started(group: Neighbours, role: str) -> Platform | None:
    return None if group.plan(role).deferred else group.platform(role)


class _Storm:
    """Start newcomers while the target runs; time each one's start-up."""

    def __init__(self, group: Neighbours, late: list[_Env], sampler: Sampler) -> None:
        self.group, self.late, self.sampler = group, late, sampler
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for e in self.late:
            th = threading.Thread(target=self._one, args=(e,), daemon=True)
            th.start()
            self.threads.append(th)

    def join(self) -> None:
        for th in self.threads:
            th.join()

    def _one(self, e: _Env) -> None:
        time.sleep(e.plan.start_after_s or 0)
        t0 = time.monotonic()
        try:
            platform = self.group.start(self.group.plan(e.plan.role), ready=True).platform
        except Exception as exc:  # noqa: BLE001 - recorded on the newcomer, target keeps going
            e.error = f"failed to start: {exc}"
            e.window = (t0, time.monotonic())
            return
        e.platform = platform
        e.startup_s = time.monotonic() - t0
        e.window = (t0, t0 + e.startup_s)
        self.sampler.add(e.plan.role, platform)
        # a point on the cell's time axis at the moment it became ready
        self.sampler.record(
            "startup_s", e.window[1] - self.sampler.t0, e.startup_s, "s", e.plan.role
        )


def _collect(
    envs, target, window: Window, labels, params, t0: float, lockstep: Lockstep | None = None
) -> list[Sample]:
    out: list[Sample] = []
    problems = []
    for e in envs:
        if e.error and e is not target:
            problems.append(f"{e.plan.role}: {e.error}")
        if (
            e is not target
            and e.plan.activity == "workload"
            and e.plan.start_after_s is None
            and e.window
            and target.window
            and not e.error
            and lockstep is None  # steps in lockstep: each one's window judged on its own
        ):
            cov, gap = _overlap(target, e)
            e.overlap = cov
            if cov < MIN_COVERAGE and gap > COVERAGE_SLACK_S:
                problems.append(
                    f"{e.plan.role} and the target overlapped for only {cov:.0%} of a run"
                )
    base = dict(labels)
    for e in envs:
        extra = base | {"env_params": params.get(e.plan.role)}
        if e.plan.load_pct is not None:
            extra[labelkeys.LOAD_PCT] = e.plan.load_pct
        if e.peak is not None:  # which measured value was the denominator, and where it is
            extra["solo_peak"] = e.peak.value
            if e.peak.cell_id is not None:
                extra["peak_cell_id"] = e.peak.cell_id
        if e.peaks:  # a schedule's 100 % per served size
            extra["solo_peak"] = {size: p.value for size, p in e.peaks.items()}
            extra["peak_cell_id"] = {size: p.cell_id for size, p in e.peaks.items()}
        if e.overlap is not None:
            extra["overlap"] = round(e.overlap, 3)
        out.extend(_label(e.samples, e, extra))
        if e.startup_s is not None and e.window is not None:
            # when it began and was ready on the cell's time axis (the series' t), so a
            # report can mark them on the target's throughput over time (seed 003 Fig. 14)
            when = {
                "started_at_s": round(e.window[0] - t0, 3),
                "ready_at_s": round(e.window[1] - t0, 3),
                labelkeys.ENV_PLATFORM: e.platform.name if e.platform else None,
                # how much of its start-up the target was serving: a VM newcomer may boot
                # past the target's run, partly beside an idle one
                "under_load_s": round(
                    _overlap_s(e.window, target.window) if target.window else 0.0, 3
                ),
            } | _scene_of(envs, target, t0)
            out.append(Sample("startup_s", e.startup_s, "s", False, e.plan.role, base | when))
    _label_storm(target, [e for e in envs if e.plan.start_after_s is not None])
    # every role's readings per point the target served, labelled with that point (a
    # neighbour's figures are "while the target served 1 KB"); never across points
    spans = [(lab, a - t0, b - t0) for lab, a, b in target.points]
    summaries = summary_samples(window, spans, base)
    _flag_points(summaries, [lab for lab, _a, _b in spans], target.samples)
    if problems:
        # the scene was not what the cell claims: flag every result, drop none
        reason = "; ".join(problems)
        for s in out + summaries:
            s.labels.setdefault(labelkeys.INVALID, f"neighbours not as planned: {reason}")
    return out + summaries


def _scene_of(envs: list[_Env], target: _Env, t0: float) -> dict[str, Any]:
    """Where a newcomer's storm sits: the scene's span on the cell's time axis (from the
    target's start to the last run or start-up that ended) and what the target served in it
    (the labels common to all its points, e.g. its file size), so a report can draw each
    storm over the target's own throughput at that size."""
    spans = [e.window for e in envs if e.window is not None]
    if target.window is None or not spans:
        return {}
    out: dict[str, Any] = {
        "scene_s": [round(target.window[0] - t0, 3), round(max(b for _a, b in spans) - t0, 3)],
        # the target's own run: after it the target idles while a newcomer may still boot
        "target_run_s": [round(target.window[0] - t0, 3), round(target.window[1] - t0, 3)],
    }
    points = [labels for labels, _a, _b in target.points]
    if points:
        out |= {k: v for k, v in points[0].items() if all(p.get(k) == v for p in points)}
    return out


def _label_storm(target: _Env, late: list[_Env]) -> None:
    """`storm_overlap_s` / `point_s` on the target's results at each point it served: the
    seconds of that point during which a newcomer was starting. Each size has its own storm
    (`run`), but the steps of a sweep at one size may still outlast it."""
    if not late:
        return
    storms = [e.window for e in late if e.window is not None]
    for labels, start, end in target.points:
        inside = _union_s([(max(a, start), min(b, end)) for a, b in storms])
        for s in target.samples:
            if s.role == "target" and all(s.labels.get(k) == v for k, v in labels.items()):
                s.labels[labelkeys.STORM_OVERLAP_S] = round(inside, 2)
                s.labels[labelkeys.POINT_S] = round(end - start, 2)


def _union_s(spans: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) spans (empty ones ignored)."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(x for x in spans if x[1] > x[0]):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _flag_points(
    summaries: list[Sample], points: list[dict[str, Any]], target: list[Sample]
) -> None:
    """A point whose target result is invalid (its window not shared, a NIC stall) is one for
    every role's readings at it: the summaries say so too, so exports never show them as a
    valid co-located figure."""

    def at(labels: dict[str, Any], point: dict[str, Any]) -> bool:
        return all(labels.get(k) == v for k, v in point.items())

    bad = []
    for point in filter(None, points):
        why = next(
            (
                str(s.labels[labelkeys.INVALID])
                for s in target
                if s.role == "target" and labelkeys.INVALID in s.labels and at(s.labels, point)
            ),
            None,
        )
        if why is not None:
            bad.append((point, why))
    for summary in summaries:
        for point, why in bad:
            if at(summary.labels, point):
                summary.labels.setdefault(
                    labelkeys.INVALID, f"the target's result at this point: {why}"
                )
                break
