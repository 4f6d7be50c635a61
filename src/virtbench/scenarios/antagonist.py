"""`antagonist`: the target beside k antagonist neighbours, placed on CPUs (seed 001 §6.3).

Grammar (positional parts after the load are optional, options in any order):

    antagonist:<load>[:<placement>][:<k>][:cpu=N][:on=<type>][:quantum=<dur>][:knob=<knob>]
              [:mb=<MiB>][:compete=none|rr|fair]

  load       cpu-load | memory-load | stress-ng-<stressor>   (workloads/antagonists.py)
  placement  free | affinity | same-cpu (default same-cpu)   (scenarios/placement.py)
  k          number of antagonists, 1..64 (default 1), each in its own environment
  cpu=N      the target's CPU for affinity/same-cpu
  on=<type>  platform type of the antagonists' environments (default: same as the target's
             platform, with the same options; e.g. on=native puts host processes beside a VM)
  quantum=   scheduler time slice during the run, e.g. 1ms, 30ms (scenarios/quantum.py)
  knob=      which quantum knob: auto | base_slice | min_granularity | rr_timeslice
  mb=        memory-load copy size in MiB (default 9, as seed 001)
  compete=   how the target and its antagonists share a CPU (docs/latency.md):
             none  the target keeps its policy (SCHED_FIFO pre-empts a normal antagonist);
             rr    both SCHED_RR at the target's priority: they alternate every quantum
                   (sched_rr_timeslice_ms; quantum= sets it), the analogue of a hypervisor
                   time-slicing two VMs on one CPU;
             fair  both SCHED_OTHER: the fair scheduler slices them (quantum= sets its base
                   slice), as a host schedules two vCPU threads.
             Default none, or rr with knob=rr_timeslice. Label `competition`.

Seed 001's scenarios: 1 `solo`, 2 `pinned`, 3 `antagonist:cpu-load:same-cpu` (with
`quantum=30ms` / `quantum=1ms`), 4 `antagonist:memory-load:same-cpu`,
5 `antagonist:cpu-load:free:3`, 6 `antagonist:memory-load:free:3`,
7 `antagonist:memory-load:free:1`.

Real-time antagonists (quantum= with the rr_timeslice knob) in containers on a host with RT
group scheduling get an equal share of the real-time budget with the target for the cell
(scenarios/rt_budget.py; labels rt_budget_*, and rt_throttle_stall_us for RT throttling).

Every target sample is labelled with the placement, CPUs, antagonist and quantum; each
antagonist adds a neighbour-N sample of the work it got done. An antagonist that dies during
the run makes the target's samples invalid (the load was not there the whole time).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools

from .. import labelkeys, parsing
from ..errors import WorkloadError
from ..parsing import ParseError
from ..platforms import registry as platform_registry
from ..platforms.base import PlatformSpec
from ..platforms.capabilities import VcpuThreads
from ..workloads import antagonists
from ..workloads.base import Sample
from . import rt_budget
from .base import Scenario, ScenarioEnv
from .neighbours import NeighbourPlan, Neighbours
from .placement import PLACEMENTS, parse_cpu, place
from .quantum import KNOBS, quantum
from .registry import register

OPTIONS = ("cpu", "on", "quantum", "knob", "mb", "compete")
COMPETE = {
    "none": "none: the target keeps its policy and pre-empts a lower-priority antagonist",
    "rr": "rr: target and antagonists SCHED_RR at one priority, alternating every quantum",
    "fair": "fair: target and antagonists SCHED_OTHER, sliced by the fair scheduler",
}
# the quantum knob each competition needs; none: whatever `auto` finds
_COMPETE_KNOB = {"rr": "rr_timeslice", "fair": "auto"}
MAX_COPY_MB = 1 << 20  # 1 TiB: a copy larger than memory fails only when the cell runs
MAX_K = 64


@register
class AntagonistScenario(Scenario):
    kind = "antagonist"
    usage = (
        "antagonist:<cpu-load|memory-load|stress-ng-NAME>[:free|affinity|same-cpu][:K]"
        "[:cpu=N][:on=TYPE][:quantum=1ms][:knob=auto|base_slice|min_granularity|rr_timeslice]"
        "[:mb=9][:compete=none|rr|fair]"
    )
    description = "k antagonists (CPU, memory, stress-ng) beside the target, placed on CPUs"

    def __init__(self, args: list[str]) -> None:
        self.args = args
        pos, opts = parsing.key_values(args, OPTIONS)
        if not pos:
            raise ValueError(f"scenario 'antagonist' needs a load; usage: {self.usage}")
        mb = _copy_size_mb(opts.get("mb", "9"))
        self.antagonist = antagonists.get(pos[0], mb)
        self.placement, self.k = "same-cpu", 1
        for part in pos[1:]:
            if part in PLACEMENTS:
                self.placement = part
            elif (k := _count(part)) is not None:
                self.k = k
            else:
                raise ValueError(
                    f"'{part}' is neither a placement ({', '.join(PLACEMENTS)}) "
                    f"nor a count 1..{MAX_K}"
                )
        self.cpu = parse_cpu(opts["cpu"]) if "cpu" in opts else None
        self.on = opts.get("on", "same")
        if self.on != "same":
            kinds = sorted(platform_registry.load_all())
            if self.on not in kinds:
                raise ValueError(
                    f"on={self.on}: unknown platform type; allowed: same, {', '.join(kinds)}"
                )
        self.quantum_ns = _duration_ns(opts["quantum"]) if "quantum" in opts else None
        self.knob = opts.get("knob", "auto")
        if self.knob not in KNOBS:
            raise ValueError(f"knob={self.knob}: allowed: {', '.join(KNOBS)}")
        if "knob" in opts and self.quantum_ns is None:
            raise ValueError("knob= needs quantum=<duration>")
        self.compete = opts.get("compete", "rr" if self.knob == "rr_timeslice" else "none")
        if self.compete not in COMPETE:
            raise ValueError(f"compete={self.compete}: allowed: {', '.join(COMPETE)}")
        if self.compete in _COMPETE_KNOB:
            if "knob" in opts and self.knob not in (_COMPETE_KNOB[self.compete], "auto"):
                raise ValueError(
                    f"compete={self.compete} sets the quantum through knob="
                    f"{_COMPETE_KNOB[self.compete]}, not knob={self.knob}"
                )
            if self.compete == "fair" and self.knob == "rr_timeslice":
                raise ValueError("compete=fair needs a fair-scheduler knob, not rr_timeslice")
            self.knob = _COMPETE_KNOB[self.compete] if self.knob == "auto" else self.knob

    def _spec(self, env: ScenarioEnv) -> PlatformSpec:
        if self.on == "same":
            return env.target.spec
        return PlatformSpec(f"antagonist-{self.on}", self.on)

    def run(self, env: ScenarioEnv) -> list[Sample]:
        ctx = env.ctx
        where = place(self.placement, self.k, self.cpu, ctx.cpus)
        labels: dict[str, object] = {
            **where.labels(),
            labelkeys.ANTAGONIST: self.antagonist.name,
            labelkeys.ANTAGONISTS: self.k,
            labelkeys.ANTAGONIST_CPUS: where.neighbours,
        }
        labels[labelkeys.COMPETITION] = COMPETE[self.compete]
        with contextlib.ExitStack() as stack:
            params = dict(ctx.params)
            policy = priority = None
            if self.compete == "rr":
                policy, priority = "rr", int(params.get("priority", -1))
            elif self.compete == "fair":
                policy = "other"
            if self.quantum_ns is not None:
                q = stack.enter_context(quantum(self.quantum_ns, self.knob))
                labels.update(q.labels())
                if q.policy_hint == "rr" and policy is None:
                    policy, priority = "rr", int(params.get("priority", -1))
                if self.compete == "fair" and q.policy_hint == "rr":
                    raise WorkloadError(
                        "compete=fair: no fair-scheduler quantum knob is writable here "
                        "(base_slice, min_granularity); only rr_timeslice was"
                    )
            if policy is not None:
                if "policy" in params:
                    params["policy"] = policy
                if policy == "rr":
                    labels[labelkeys.QUANTUM_POLICY] = "rr"
            if policy == "rr" and isinstance(env.target, VcpuThreads):
                # a VM's vCPU threads are host CFS tasks: RR inside guests is moot
                labels[labelkeys.QUANTUM_EFFECTIVE] = False
                labels[labelkeys.WARNING] = (
                    "SCHED_RR competition (and the rr_timeslice quantum) only acts between "
                    f"host SCHED_RR tasks; the {env.target.kind} platform's vCPU threads are "
                    "not, so it was not in effect"
                )
            argv = functools.partial(
                self.antagonist.argv,
                max_seconds=(ctx.timeout or 3600) + 60,
                policy=policy,
                priority=priority,
            )
            # real-time antagonists in containers need their own share of the rt budget
            budget = stack.enter_context(
                rt_budget.split(
                    env.target,
                    [self._spec(env) for _ in where.neighbours],
                    realtime=policy in ("rr", "fifo"),
                    what=self.text(),
                    log=ctx.log,
                )
            )
            plans = [
                NeighbourPlan(f"neighbour-{i + 1}", spec, argv, cpus)
                for i, (spec, cpus) in enumerate(zip(budget.specs, where.neighbours, strict=True))
            ]
            group = stack.enter_context(Neighbours(env, plans, self.text()))
            samples = env.workload.run(
                env.target, dataclasses.replace(ctx, cpus=where.target, params=params)
            )
            died = None
            try:
                group.check_alive()
            except WorkloadError as exc:
                died = str(exc)
            group.stop()
        for s in samples:
            s.labels.update(labels, **budget.labels)
            if died:
                s.labels.setdefault(
                    labelkeys.INVALID, f"an antagonist stopped during the run: {died}"
                )
        granted = dict(zip((p.role for p in plans), budget.neighbour_labels, strict=True))
        for n in group.finished:
            if n.result is not None:
                for s in self.antagonist.samples(n.result, n.plan.role):
                    s.labels.update(
                        labels, **{labelkeys.CPUS: n.plan.cpus}, **granted.get(n.plan.role, {})
                    )
                    samples.append(s)
        return samples


def _copy_size_mb(text: str) -> float:
    try:
        return parsing.number(text, 0, MAX_COPY_MB, above=True)
    except ParseError:
        raise ValueError(
            f"mb={text}: must be a positive number of MiB, at most {MAX_COPY_MB}"
        ) from None


def _count(text: str) -> int | None:
    try:
        return parsing.integer(text, 1, MAX_K, text=True)
    except ParseError:
        return None


# the kernel's own bounds of a time slice (sched_min_granularity_ns: 0.1 ms .. 1 s)
MIN_QUANTUM_NS, MAX_QUANTUM_NS = 100_000, 1_000_000_000


def _duration_ns(text: str) -> int:
    try:
        ns = parsing.duration_ns(text)
    except ParseError as exc:
        raise ValueError(f"quantum={text}: {exc.problem}; allowed: {exc.allowed}") from None
    if not MIN_QUANTUM_NS <= ns <= MAX_QUANTUM_NS:
        raise ValueError(f"quantum={text}: is out of range; allowed: 100us..1s")
    return ns
