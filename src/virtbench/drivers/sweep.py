"""The open-loop rate sweep's plan and verdicts, kept free of tools so it is unit-testable.

Rates rise in steps (absolute req/s, or fractions of a measured capacity as in seed 000's
10 % rounds); the sweep stops when throughput has stayed below its best for `fall_steps`
steps in a row, or when errors pass a threshold. The headline is the best throughput among
VALID steps and the offered rate where it was reached (seed 000 Fig. 5, seed 003 Fig. 16).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import labelkeys
from ..errors import VirtbenchError
from ..results import Sample
from ..saturation import MAX_STEPS, SATURATED, SERVED_IN_FULL


@dataclass(frozen=True)
class Plan:
    start: float  # first offered rate, req/s
    step: float  # increment, req/s (> 0)
    max_steps: int
    max_rate: float | None = None  # no step above this rate

    def __post_init__(self) -> None:
        if self.step <= 0:
            raise VirtbenchError(
                f"web sweep: rate step must be > 0 req/s (got {self.step}); set rate_step"
                " (absolute mode) or step_fraction (capacity mode) to a positive value"
            )
        if self.start <= 0:
            raise VirtbenchError(f"web sweep: start rate must be > 0 req/s (got {self.start})")
        if self.max_steps < 1:
            raise VirtbenchError(f"web sweep: max_steps must be >= 1 (got {self.max_steps})")

    def rates(self) -> list[float]:
        out = []
        for i in range(self.max_steps):
            r = self.start + i * self.step
            if self.max_rate is not None and r > self.max_rate * (1 + 1e-9):
                break
            out.append(r)
        return out


def capacity_plan(
    capacity: float, start_fraction: float, step_fraction: float, max_fraction: float
) -> Plan:
    """Seed 000's plan: from `start_fraction` of capacity up in `step_fraction` steps."""
    if capacity <= 0:
        raise VirtbenchError("web sweep: the capacity probe measured 0 req/s; nothing to sweep")
    steps = (
        int(round((max_fraction - start_fraction) / step_fraction)) + 1 if step_fraction > 0 else 0
    )
    return Plan(
        start=capacity * start_fraction,
        step=capacity * step_fraction,
        max_steps=max(steps, 1),
        max_rate=capacity * max_fraction,
    )


@dataclass
class StepResult:
    index: int
    offered_rate: float
    throughput: float  # replies/s
    errors: int
    attempts: int
    invalid: str | None = None

    @property
    def error_share(self) -> float:
        return self.errors / self.attempts if self.attempts else 0.0


def stop_reason(steps: list[StepResult], fall_steps: int, error_threshold: float) -> str | None:
    """Why the sweep should stop after the last step, or None to go on."""
    if not steps:
        return None
    last = steps[-1]
    if last.error_share > error_threshold:
        return f"errors {last.error_share:.1%} of connections > {error_threshold:.1%}"
    best = 0.0
    below = 0
    for s in steps:
        if s.throughput > best:
            best, below = s.throughput, 0
        else:
            below += 1
    if below >= fall_steps:
        return f"throughput below its best ({best:.0f} req/s) for {below} steps"
    return None


def served_in_full(step: StepResult) -> bool:
    """The step's server kept up with its offered rate: it was not saturated there."""
    return step.offered_rate > 0 and step.throughput >= SERVED_IN_FULL * step.offered_rate


# steps in a row not served in full that end a sweep's extension: one alone can be the
# host's noise (docs/colocation.md "A sweep served in full at its top goes on")
FELL_BEHIND_STEPS = 2


def fell_behind(steps: list[StepResult]) -> bool:
    """The last FELL_BEHIND_STEPS steps were not served in full: the server saturated."""
    tail = steps[-FELL_BEHIND_STEPS:]
    return len(tail) == FELL_BEHIND_STEPS and not any(served_in_full(s) for s in tail)


def extension(plan: Plan, top_rate: float, max_steps: int) -> list[float]:
    """The rates that continue `plan` past its last step, in its own step, up to `top_rate`
    and `max_steps` steps in all: where a sweep goes on while its server still serves all
    it is offered (the wrk probe can read below what the server serves under httperf, and a
    sweep stopping at the probe would read a lower bound as its peak)."""
    rates = plan.rates()
    if not rates:
        return []
    out: list[float] = []
    r = rates[-1] + plan.step
    while len(rates) + len(out) < max_steps and r <= top_rate * (1 + 1e-9):
        out.append(r)
        r += plan.step
    return out


def plan_of(params: dict[str, Any], capacity: float | None, top_rate_param: str) -> Plan:
    """A sweep's plan from its parameters: absolute (`rate_start` + k x `rate_step`), or
    fractions of a measured `capacity` (seed 000); widened to the solo-peak retry's
    `top_rate_param` where set."""
    p = params
    top = float(p.get(top_rate_param) or 0)
    if p.get("mode", "capacity") == "absolute":
        plan = Plan(float(p["rate_start"]), float(p["rate_step"]), int(p["max_steps"]))
        return widened(plan, top)
    assert capacity is not None
    plan = capacity_plan(
        capacity, float(p["start_fraction"]), float(p["step_fraction"]), float(p["max_fraction"])
    )
    plan = Plan(plan.start, plan.step, min(plan.max_steps, int(p["max_steps"])), plan.max_rate)
    return widened(plan, top)


def beyond(params: dict[str, Any], plan: Plan) -> list[float]:
    """Capacity mode: the steps past `plan` (extend_fraction) a sweep takes while its
    server still serves all it is offered; scaled as the plan is (a widened retry)."""
    p = params
    top, reach = float(p["max_fraction"]), float(p.get("extend_fraction", 0))
    if p.get("mode", "capacity") != "capacity" or plan.max_rate is None or reach <= top:
        return []
    return extension(plan, plan.max_rate * reach / top, int(p["max_steps"]))


def climb(
    rates: list[float],
    further: list[float],
    take: Callable[[int, float], StepResult],
    fall_steps: int,
    error_threshold: float,
    log: Callable[[str], None],
) -> tuple[list[StepResult], str]:
    """Run a sweep: `take(i, rate)` measures step i at `rate` (the tool's part); the steps of
    `rates`, then, while its top step was served in full, those of `further` until it falls
    behind; it stops early when `stop_reason` says so. Returns the steps taken and why it
    stopped (`MAX_STEPS`, "errors", "falling", or `SATURATED` past its plan)."""
    steps: list[StepResult] = []
    stopped = MAX_STEPS
    for i, rate in enumerate(rates + further):
        if i == len(rates):
            if not served_in_full(steps[-1]):
                break  # saturated within its plan
            log(
                f"its top step was served in full; it goes on up to {further[-1]:,.0f} req/s"
                " until the server saturates"
            )
        elif i > len(rates) and fell_behind(steps):
            break
        steps.append(take(i, rate))
        reason = stop_reason(steps, fall_steps, error_threshold)
        if reason:
            stopped = "errors" if reason.startswith("errors") else "falling"
            log(f"sweep stopped: {reason}")
            break
    past_plan = len(steps) > len(rates)
    if stopped == MAX_STEPS and past_plan and not served_in_full(steps[-1]):
        stopped = SATURATED
    return steps, stopped


def peak(steps: list[StepResult]) -> StepResult | None:
    """The step with the highest throughput among valid steps (None if none is valid)."""
    valid = [s for s in steps if not s.invalid]
    return max(valid, key=lambda s: s.throughput) if valid else None


# a peak step that served SERVED_IN_FULL of its offered rate had not saturated the server,
# and a next step serving less than this share of it is a server that stopped, not one
# that fell behind (a saturated server still serves near its peak while httperf runs out
# of sockets)
COLLAPSED = 0.5


def broke_before_saturation(steps: list[StepResult], best: StepResult) -> str | None:
    """Why `best` is only a lower bound of the server's peak: it served everything offered,
    and the next step (invalid) served almost nothing, so the sweep ended on a server that
    stopped answering (a stalled guest, a crash), not on one that was saturated."""
    after = [s for s in steps if s.index == best.index + 1]
    if not after or not after[0].invalid or best.offered_rate <= 0:
        return None
    nxt = after[0]
    if not served_in_full(best):
        return None
    if nxt.throughput >= COLLAPSED * best.throughput:
        return None
    return (
        f"lower bound, not a peak: step {best.index} served all {best.offered_rate:.0f} req/s "
        f"offered, then step {nxt.index} served {nxt.throughput:.0f} of {nxt.offered_rate:.0f} "
        f"({nxt.invalid}): the server stopped answering before it saturated"
    )


def never_saturated(stopped: str, offered: float, served: float, probe: float | None) -> str | None:
    """Why a solo sweep's headline is no peak: it ran out of steps and its top step
    (`offered` req/s) was served in full, so the server was never seen saturated; its scale
    was too low (in capacity mode, a capacity `probe` that read low: a guest NIC stalled
    during it). A co-location schedule scaled by it would offer a fraction of what the
    server serves (docs/colocation.md)."""
    if stopped != MAX_STEPS or offered <= 0 or served < SERVED_IN_FULL * offered:
        return None
    why = (
        f"sweep never saturated: its top step, {offered:,.0f} req/s offered, was served in"
        f" full ({served:,.0f} req/s)"
    )
    return why + (f"; the capacity probe (wrk, {probe:,.0f} req/s) set its scale" if probe else "")


def mark_unsaturated(samples: list[Sample], label: str = "invalid") -> float | None:
    """Of a solo peak's run only (an ordinary sweep is stored as it ran; the report
    labels where it stopped): each file size's sweep that ran out of steps with its top
    step served in full (never_saturated) gets `label` on its headline (invalid,
    or a last attempt's lower bound); the highest such top rate."""
    top_rate = None
    for head in samples:
        if head.metric != "steps" or head.labels.get(labelkeys.PHASE):
            continue
        size, last = head.labels.get(labelkeys.FILE_SIZE_KB), int(head.value) - 1
        mine = [
            s
            for s in samples
            if s.labels.get(labelkeys.FILE_SIZE_KB) == size and not s.labels.get(labelkeys.PHASE)
        ]
        top = next(
            (s for s in mine if s.metric == "reply_rate" and s.labels.get(labelkeys.STEP) == last),
            None,
        )
        if top is None:
            continue
        offered = float(top.labels.get(labelkeys.OFFERED_RATE, 0))
        probes = [s for s in mine if s.metric == "capacity_probe"]
        # the probe that set the scale (stores written before the label: the last one)
        used = next((s for s in probes if s.labels.get(labelkeys.PROBE_USED)), None)
        used = used or (probes[-1] if probes else None)
        why = never_saturated(
            str(head.labels.get(labelkeys.STOPPED)),
            offered,
            top.value,
            used.value if used else None,
        )
        if why is None:
            continue
        for s in mine:
            if s.metric in ("peak_throughput", "peak_offered_rate"):
                s.labels.setdefault(label, why)
        top_rate = max(top_rate or 0.0, offered)
    return top_rate


def widened(plan: Plan, top_rate: float) -> Plan:
    """`plan` scaled so that its top step offers at least `top_rate` (same number of steps,
    same fractions): the retry of a solo peak whose first sweep never saturated."""
    rates = plan.rates()
    if top_rate <= 0 or not rates or rates[-1] >= top_rate:
        return plan
    f = top_rate / rates[-1]
    top = plan.max_rate * f if plan.max_rate is not None else None
    return Plan(plan.start * f, plan.step * f, plan.max_steps, top)


def schedule(
    peak: float, start_fraction: float, step_fraction: float, max_fraction: float
) -> list[float]:
    """Lockstep rates: the same fractions of each environment's own solo peak (seed 000: 10 %,
    20 % ... 100 % of full load), so co-located environments share every step's intensity."""
    return [
        round(r, 1)
        for r in capacity_plan(peak, start_fraction, step_fraction, max_fraction).rates()
    ]


class Lockstep:
    """Co-located environments sweeping together: every step starts behind a barrier for all
    of them and ends behind another, so the n-th step of each is measured while every other
    one is at its n-th step. A party's step is shared when each other party's window of that
    step covered `min_share` of it, or left at most `slack_s` uncovered."""

    def __init__(
        self,
        parties: list[str],
        min_share: float,
        slack_s: float,
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.names = list(parties)
        self.min_share, self.slack_s = min_share, slack_s
        self.clock = clock  # what stamps the windows (a test's fake clock: no timing in tests)
        self._begin = threading.Barrier(len(parties), timeout=timeout_s)
        self._end = threading.Barrier(len(parties), timeout=timeout_s)
        # n-th step -> party -> [start, end] (monotonic; end 0 while it runs)
        self.windows: dict[int, dict[str, list[float]]] = {}
        self.served: dict[int, dict[str, bool]] = {}  # n-th step -> party -> served anything
        self._lock = threading.Lock()

    def party(self, name: str) -> LockstepParty:
        return LockstepParty(self, name)

    def abort(self) -> None:
        """A party stopped (done or failed): nobody waits for it; its later steps are
        missing, so the others' are unshared."""
        self._begin.abort()
        self._end.abort()

    def mark(
        self, n: int, name: str, at: int, t: float | None = None, served: bool | None = None
    ) -> None:
        with self._lock:
            w = self.windows.setdefault(n, {}).setdefault(name, [0.0, 0.0])
            w[at] = self.clock() if t is None else t
            if served is not None:
                self.served.setdefault(n, {})[name] = served

    def verdict(self, n: int, name: str) -> str | None:
        """Why the party's n-th step was not shared by every other party (None: it was)."""
        with self._lock:
            step = {k: list(v) for k, v in self.windows.get(n, {}).items()}
            served = dict(self.served.get(n, {}))
        own = step.get(name)
        if own is None or not own[1]:
            return "step window not recorded"
        span = max(own[1] - own[0], 1e-9)
        why = []
        for other in self.names:
            w = step.get(other)
            if other == name:
                continue
            if served.get(other) is False:
                why.append(f"{other} served nothing in it")
                continue
            covered = 0.0
            if w is not None and w[1]:
                covered = max(0.0, min(own[1], w[1]) - max(own[0], w[0]))
            share = min(1.0, covered / span)
            if share < self.min_share and span - covered > self.slack_s:
                if w is None or not w[1]:
                    why.append(f"{other} stopped before it")
                else:
                    why.append(f"{other} ran it for {share:.0%} of this one's {span:.1f} s")
        return ("step window not shared: " + "; ".join(why)) if why else None


class LockstepParty:
    """One environment's view of a Lockstep: begin() and end() around each of its steps."""

    def __init__(self, lockstep: Lockstep, name: str) -> None:
        self.lockstep, self.name = lockstep, name
        self.n = 0  # steps begun so far

    def begin(self) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            self.lockstep._begin.wait()
        self.lockstep.mark(self.n, self.name, 0)

    def end(self, served: bool | None = None, at: float | None = None) -> str | None:
        """Wait for every party to end this step (its window ended `at`, default now; it
        `served` anything, None: not known); why it was not shared (None: it was)."""
        n, self.n = self.n, self.n + 1
        self.lockstep.mark(n, self.name, 1, at, served)
        # broken: a party stopped (or a released party's abort came first); the windows
        # recorded so far decide, a missing one counts as not there
        with contextlib.suppress(threading.BrokenBarrierError):
            self.lockstep._end.wait()
        return self.lockstep.verdict(n, self.name)

    def labels(self) -> dict[str, int]:
        """Of the step just ended: results of co-located environments with the same
        `lockstep_step` shared one window (a `different:SIZE` neighbour's 70 KB run beside
        the target's 1 KB, not beside its 50 KB)."""
        return {"lockstep_step": self.n - 1}
