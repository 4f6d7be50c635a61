"""Neighbour environments beside the target: the one layer every neighbour scenario uses
(antagonists, idle neighbours, co-located workloads, start-up storms) to provision, pin,
start, health-check, stop and tear them down.

    plans = [NeighbourPlan("neighbour-1", spec, argv=lambda p: [...], cpus=[1])]
    with Neighbours(env, plans, "antagonist:cpu-load") as group:
        group.check_alive()          # fail early if a neighbour died at start
        samples = env.workload.run(env.target, ctx)
        group.check_alive()          # a neighbour that died mid-run invalidates the run
    for n in group.finished:         # each neighbour's ExecResult after stop
        ...

On entry: the memory of every plan (deferred ones included) is checked before anything
starts (memory_check.py); then each plan that is not deferred, in order, gets its own
environment from `ScenarioEnv.new_platform(spec, role)`; then each command (if any) is started
with `Platform.spawn(cpus=...)` (or later, by `start_commands()`, with
`commands_on_enter=False`), and after `settle_s` all are checked to be running. A neighbour that
fails to start fails the group with a VirtbenchError naming it; whatever was started is torn
down, in reverse order, as it is on exit. Deferred plans (start-up storms) are started later
with `start()` from any thread; once the group has exited, a start provisions nothing, and one
still provisioning when it exits tears down what it made (the exit waits for it, bounded).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field

from .. import labelkeys
from ..cgroups import CpuBudget
from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import ExecResult, Platform, PlatformSpec, Process
from .base import ScenarioEnv
from .memory_check import check_memory

# An idle neighbour keeps one sleeping process, so it has something to account.
IDLE_ARGV = ["sleep", "infinity"]
# how long exiting the group waits for a start still provisioning in another thread (a storm
# newcomer when the scene is interrupted): past it virtbench may exit while that environment
# is half made, its QEMU, tap and overlay left to `virtbench cleanup`. A VM's boot_timeout
# defaults to 120 s
START_WAIT_S = 300.0


def idle(_platform: Platform) -> list[str]:
    return IDLE_ARGV


@dataclass
class NeighbourPlan:
    role: str  # "neighbour-1", ... (the export contract's role column)
    spec: PlatformSpec  # the environment to provision for it
    # the command to run inside, given its provisioned platform (`idle` for a sleeping one);
    # None: no command, the caller runs its workload in the environment
    argv: Callable[[Platform], list[str]] | None = None
    cpus: list[int] | None = None  # host CPUs to pin it to; None: free
    env: dict[str, str] | None = None
    deferred: bool = False  # not started on entry; the caller starts it with `start()`
    budget: CpuBudget | None = None  # a shared CPU budget to provision it in (co-location)


@dataclass
class RunningNeighbour:
    plan: NeighbourPlan
    platform: Platform
    process: Process | None = None
    result: ExecResult | None = None  # set by stop()
    labels: dict[str, object] = field(default_factory=dict)


class Neighbours:
    """Context manager over a group of neighbours; stops and tears down all on exit."""

    def __init__(
        self,
        env: ScenarioEnv,
        plans: list[NeighbourPlan],
        what: str = "neighbours",
        settle_s: float = 0.5,
        meminfo: str | None = None,
        commands_on_enter: bool = True,
    ) -> None:
        self.env = env
        self.plans = plans
        self.what = what  # the scenario string, for error messages
        self.settle_s = settle_s  # let the commands reach their steady state
        self.meminfo = meminfo  # /proc/meminfo text (tests); None: read it
        # False: the caller starts the commands with start_commands() when its scene is set
        self.commands_on_enter = commands_on_enter
        self.running: list[RunningNeighbour] = []
        self.finished: list[RunningNeighbour] = []
        self._stack = ExitStack()
        self._lock = threading.Lock()  # deferred starts come from other threads
        self._closed = False  # exited: starts from other threads provision nothing more
        self._provisioning = 0  # starts inside new_platform() right now
        self._provisioned = threading.Condition(self._lock)

    def __enter__(self) -> Neighbours:
        check_memory(self.plans, self.what, self.meminfo)
        try:
            for plan in self.plans:
                if not plan.deferred:
                    self._or_fail(plan, self.provision)
            if self.commands_on_enter:
                self.start_commands()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _or_fail(self, plan: NeighbourPlan, step: Callable[[NeighbourPlan], object]) -> None:
        """Run one start-up step; a failure names the neighbour and what gets torn down."""
        try:
            step(plan)
        except Exception as exc:
            others = [n.plan.role for n in self.running if n.plan is not plan]
            raise VirtbenchError(
                f"scenario '{self.what}': {plan.role} on platform '{plan.spec.name}' failed to "
                f"start: {exc}; torn down: {', '.join(others) or 'nothing else was started'}"
            ) from exc

    def provision(self, plan: NeighbourPlan) -> RunningNeighbour:
        """Provision `plan`'s environment; it is torn down when the group exits (or at once,
        if the group exited while it was being made)."""
        closed = VirtbenchError(f"{plan.role} not started: the group was closed ({self.what})")
        with self._lock:
            if self._closed:
                raise closed
            self._provisioning += 1
        try:
            if plan.budget is None:
                cm = self.env.new_platform(plan.spec, plan.role)
            else:
                cm = self.env.new_platform(plan.spec, plan.role, budget=plan.budget)
            platform = cm.__enter__()
            n = RunningNeighbour(plan, platform)
            with self._lock:
                late = self._closed
                if not late:
                    self._stack.push(cm.__exit__)
                    self.running.append(n)
            if late:  # the group's teardown has run: nobody else will tear this one down
                cm.__exit__(None, None, None)
                raise closed
            return n
        finally:
            with self._lock:
                self._provisioning -= 1
                self._provisioned.notify_all()

    def _spawn(self, n: RunningNeighbour) -> None:
        if n.process is None and n.plan.argv is not None:
            p = n.plan
            n.process = n.platform.spawn(p.argv(n.platform), cpus=p.cpus, env=p.env)  # type: ignore[misc]

    def start_commands(self) -> None:
        """Start every provisioned neighbour's command (pinned), let them settle, check them."""
        for n in list(self.running):
            self._or_fail(n.plan, lambda _plan, n=n: self._spawn(n))
        if self.settle_s and any(n.process for n in self.running):
            time.sleep(self.settle_s)
        self.check_alive()

    def start(self, plan: NeighbourPlan, ready: bool = False) -> RunningNeighbour:
        """Start a deferred neighbour now (any thread): provision, start its command and, with
        `ready`, wait until the environment runs a first command. Raises what failed."""
        n = self.provision(plan)
        self._spawn(n)
        if ready:
            check = n.platform.exec(["true"], timeout=120)
            if not check.ok:
                raise VirtbenchError(f"first command failed: {check.stderr.strip()[-200:]}")
        return n

    def plan(self, role: str) -> NeighbourPlan:
        return next(p for p in self.plans if p.role == role)

    def platform(self, role: str) -> Platform:
        """The provisioned environment of a started neighbour."""
        return next(n.platform for n in self.running + self.finished if n.plan.role == role)

    def exited(self) -> dict[str, str]:
        """Role -> what happened, for every neighbour whose command has already exited."""
        out = {}
        for n in list(self.running):
            if n.process is not None and n.process.poll() is not None:
                res = n.process.stop(timeout=1)
                tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
                out[n.plan.role] = (
                    f"{n.plan.role} on {n.platform.name} exited early "
                    f"(code {res.returncode}): {' | '.join(tail)}"
                )
        return out

    def check_alive(self) -> None:
        """Raise WorkloadError if a neighbour's command has already exited."""
        for why in self.exited().values():
            raise WorkloadError(why)

    def stop(self) -> list[RunningNeighbour]:
        """Stop every command (idempotent); results land in `finished`."""
        with self._lock:
            while self.running:
                n = self.running.pop(0)
                if n.process is not None:
                    try:
                        n.result = n.process.stop()
                    except Exception as exc:  # noqa: BLE001 - stop the others regardless
                        n.labels[labelkeys.STOP_ERROR] = str(exc)
                self.finished.append(n)
        return self.finished

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._closed = True
        try:
            self.stop()
        finally:
            try:
                self._stack.close()  # environments torn down in reverse order of start
            finally:
                # a start still inside new_platform() (Ctrl-C during a storm) tears down what
                # it made when it gets there: do not let virtbench exit before it has
                with self._lock:
                    done = self._provisioned.wait_for(lambda: not self._provisioning, START_WAIT_S)
                if not done:
                    self.env.ctx.log(
                        f"{self.what}: a neighbour was still being provisioned {START_WAIT_S:.0f}"
                        " s after the scene ended; if virtbench exits first, run virtbench cleanup"
                    )
