"""The workload contract: a test case declares its suite, unit, direction and tools, builds the
argv for a real tool and parses that tool's machine-readable output into samples.

A workload never knows which platform it runs on: it only calls the Platform interface.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import WorkloadError
from ..platforms.base import check  # judges an ExecResult, so it lives beside it; re-exported
from ..results import Metric, Sample

if TYPE_CHECKING:
    from ..platforms.base import ExecResult, Platform
    from ..serving.remote import CellClient


@dataclass(frozen=True)
class Param:
    """A tunable of a test case, validated when the campaign is loaded."""

    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None


@dataclass
class RunContext:
    """What the runner gives a workload for one execution."""

    params: dict[str, Any]
    timeout: float | None = None
    cpus: list[int] | None = None  # host CPUs the target is pinned to (None: free)
    client_cpus: list[int] | None = None  # host CPUs for a load generator on the host
    # record a time series point: (metric, t_seconds_since_cell_start, value, unit, role)
    series: Callable[[str, float, float, str, str], None] = lambda *a: None
    log: Callable[[str], None] = lambda msg: None
    # a point the workload served: its dimension labels (file_size_kb, step...) and when it
    # measured it (time.monotonic() start, end); the cell's 1 s readings are summarized per
    # point (metrics/sampler.py), so a workload serving several points in one run reports each
    point: Callable[[dict[str, Any], float, float], None] = lambda *a: None
    # the campaign's client host (serving/remote.py): clients run there over SSH; None: on
    # this host
    remote: CellClient | None = None
    # time.monotonic() at the cell's start: `series` t counts from here, the axis of the
    # cell's sampler, so a workload's points and the 1 s readings line up (None: not known,
    # count from the workload's own start)
    t0: float | None = None


class Workload(abc.ABC):
    suite: ClassVar[str]
    name: ClassVar[str]  # the test case name, unique across suites
    description: ClassVar[str]
    tools: ClassVar[tuple[str, ...]] = ()  # executables needed inside the environment
    host_tools: ClassVar[tuple[str, ...]] = ()  # executables needed on the host (clients)
    metrics: ClassVar[tuple[Metric, ...]]
    # labels of this test case's samples that identify distinct results (a sweep's step, a
    # file size) and labels that never split its results; stored with every run
    dimension_labels: ClassVar[tuple[str, ...]] = ()
    ignored_labels: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, Param]] = {}
    # (low, high) pairs of params where low must not exceed high (checked at load)
    param_order: ClassVar[tuple[tuple[str, str], ...]] = ()
    # what co-location asks of a workload beyond this (an offered rate, served sizes, a rate
    # schedule, a solo-peak retry, steps in lockstep) is in workloads/capabilities.py

    @classmethod
    def metric(cls, name: str) -> Metric:
        for m in cls.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    @classmethod
    def primary(cls) -> Metric:
        return next((m for m in cls.metrics if m.primary), cls.metrics[0])

    def sample(self, metric: str, value: float, **labels: Any) -> Sample:
        m = self.metric(metric)
        labels = {**getattr(self, "_run_labels", {}), **labels}
        return Sample(m.name, float(value), m.unit, m.higher_is_better, labels=labels)

    def label_all(self, **labels: Any) -> None:
        """Labels every later sample of this run carries (e.g. the network path its client
        took, once its server is up); a workload instance measures one cell."""
        self._run_labels = {**getattr(self, "_run_labels", {}), **labels}

    # The simple shape: one command, run once, parsed. Override `run` for multi-step workloads.
    def command(self, ctx: RunContext, platform: Platform) -> list[str]:
        raise NotImplementedError

    def parse(self, result: ExecResult, ctx: RunContext) -> list[Sample]:
        raise NotImplementedError

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        argv = self.command(ctx, platform)
        result = platform.exec(argv, cpus=ctx.cpus, timeout=ctx.timeout)
        check(result, self.name)
        samples = self.parse(result, ctx)
        if not samples:
            raise WorkloadError(f"{self.name}: no samples parsed from {argv[0]} output")
        return samples
