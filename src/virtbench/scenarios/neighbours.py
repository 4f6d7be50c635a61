"""Start neighbour environments beside the target, run a command in each, stop them all.

The one mechanism every neighbour scenario (antagonists, idle neighbours, weights, ...)
shares. Usage:

    plans = [NeighbourPlan("neighbour-1", spec, argv=lambda p: [...], cpus=[1])]
    with Neighbours(env, plans) as group:
        group.check_alive()          # fail early if a neighbour died at start
        samples = env.workload.run(env.target, ctx)
        group.check_alive()          # a neighbour that died mid-run invalidates the run
    for n in group.finished:         # each neighbour's ExecResult after stop
        ...

Each neighbour gets its own environment from `ScenarioEnv.new_platform(spec, role)` (so it
is torn down even on error), and its command is started with `Platform.spawn(cpus=...)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field

from ..errors import WorkloadError
from ..platforms.base import ExecResult, Platform, PlatformSpec, Process
from .base import ScenarioEnv


@dataclass
class NeighbourPlan:
    role: str  # "neighbour-1", ... (the export contract's role column)
    spec: PlatformSpec  # the environment to provision for it
    # the command to run inside, given its provisioned platform; None: an idle neighbour
    argv: Callable[[Platform], list[str]] | None = None
    cpus: list[int] | None = None  # host CPUs to pin it to; None: free
    env: dict[str, str] | None = None


@dataclass
class RunningNeighbour:
    plan: NeighbourPlan
    platform: Platform
    process: Process | None = None
    result: ExecResult | None = None  # set by stop()
    labels: dict[str, object] = field(default_factory=dict)


class Neighbours:
    """Context manager over a group of neighbours; stops and tears down all on exit."""

    def __init__(self, env: ScenarioEnv, plans: list[NeighbourPlan], settle_s: float = 0.5):
        self.env = env
        self.plans = plans
        self.settle_s = settle_s  # let the commands reach their steady state
        self.running: list[RunningNeighbour] = []
        self.finished: list[RunningNeighbour] = []
        self._stack = ExitStack()

    def __enter__(self) -> Neighbours:
        try:
            for plan in self.plans:
                platform = self._stack.enter_context(self.env.new_platform(plan.spec, plan.role))
                n = RunningNeighbour(plan, platform)
                self.running.append(n)  # before spawn, so a failed spawn is still torn down
                if plan.argv is not None:
                    n.process = platform.spawn(plan.argv(platform), cpus=plan.cpus, env=plan.env)
            if self.settle_s and any(n.process for n in self.running):
                time.sleep(self.settle_s)
            self.check_alive()
        except BaseException:
            self.stop()
            self._stack.close()
            raise
        return self

    def check_alive(self) -> None:
        """Raise WorkloadError if a neighbour's command has already exited."""
        for n in self.running:
            if n.process is not None and n.process.poll() is not None:
                res = n.process.stop(timeout=1)
                tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
                raise WorkloadError(
                    f"{n.plan.role} on {n.platform.name} exited early "
                    f"(code {res.returncode}): {' | '.join(tail)}"
                )

    def stop(self) -> list[RunningNeighbour]:
        """Stop every command (idempotent); results land in `finished`."""
        while self.running:
            n = self.running.pop(0)
            if n.process is not None:
                try:
                    n.result = n.process.stop()
                except Exception as exc:  # noqa: BLE001 - stop the others regardless
                    n.labels["stop_error"] = str(exc)
            self.finished.append(n)
        return self.finished

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self._stack.close()
