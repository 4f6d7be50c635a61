"""Samples every environment of a co-location cell once a second, on one shared time axis.

Per role: CPU utilization (the same reading as metrics.sampler), scheduler counters
(metrics.schedstat), network/disk/memory (metrics.resources); plus role `host` for the
softirq work Linux does on behalf of all of them (metrics.hostwork). Each point goes to the
cell's series; `summary()` gives mean, stdev, CoV and count per role and metric so a scenario
can store every figure with its spread.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..platforms.base import Platform
from . import hostwork, resources, schedstat
from .sampler import accounting_cpu_seconds

HOST_ROLE = "host"
Record = Callable[[str, float, float, str, str], None]


@dataclass
class Stat:
    mean: float
    stdev: float
    cov: float | None  # stdev / mean; None when the mean is 0
    n: int
    unit: str


@dataclass
class _Prev:
    t: float
    cpu: float | None
    sched: schedstat.SchedSnapshot
    res: resources.ResourceSnapshot
    backend: dict[int, int]  # run ns of a VM's non-vCPU threads (empty for other platforms)


class EnvSampler:
    """Background thread; `roles` may grow while it runs (`add`, for start-up storms)."""

    def __init__(
        self,
        roles: dict[str, Platform],
        record: Record,
        *,
        interval: float = 1.0,
        t0: float | None = None,
        skip_cpu: frozenset[str] = frozenset(),
        host: bool = True,
    ) -> None:
        self.roles = dict(roles)
        self.record, self.interval = record, interval
        self.t0 = time.monotonic() if t0 is None else t0
        self.skip_cpu = skip_cpu  # roles whose cpu_util series another sampler records
        self.host = host
        self.points: dict[tuple[str, str], list[float]] = {}
        self.units: dict[str, str] = {}
        self.own_cpu_s = 0.0  # CPU time this sampler itself used (overhead accounting)
        self.ticks = 0
        self._prev: dict[str, _Prev] = {}
        self._host_prev: hostwork.HostSnapshot | None = None
        self._ksoftirqd: list[int] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="vb-env-sampler")

    def add(self, role: str, platform: Platform) -> None:
        with self._lock:
            self.roles[role] = platform

    def __enter__(self) -> EnvSampler:
        if self.host:
            self._ksoftirqd = hostwork.ksoftirqd_tids()
        self.tick()  # first snapshot, so the first interval yields rates
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def _emit(
        self, role: str, metric: str, t: float, value: float, unit: str, series: bool = True
    ) -> None:
        if series:
            self.record(metric, t, value, unit, role)
        self.points.setdefault((role, metric), []).append(value)
        self.units[metric] = unit

    def tick(self) -> None:
        """Take one snapshot of every role and record rates against the previous one."""
        c0 = time.thread_time()
        now = time.monotonic()
        t = now - self.t0
        with self._lock:
            roles = list(self.roles.items())
        for role, platform in roles:
            try:
                self._sample_role(role, platform, now, t)
            except Exception:  # noqa: BLE001 - a vanished environment must not kill the cell
                self._prev.pop(role, None)
        if self.host:
            snap = hostwork.snapshot(now, self._ksoftirqd)
            if snap is not None and self._host_prev is not None:
                for metric, (value, unit) in hostwork.rates(
                    self._host_prev, snap, os.cpu_count() or 1
                ).items():
                    self._emit(HOST_ROLE, metric, t, value, unit)
            self._host_prev = snap
        self.ticks += 1
        self.own_cpu_s += time.thread_time() - c0

    def _sample_role(self, role: str, platform: Platform, now: float, t: float) -> None:
        acct = platform.accounting()
        procs = schedstat.descendants(acct.pids) if acct.pids else []  # one walk per tick
        sched = schedstat.snapshot(acct, now, procs=None if acct.threads else procs)
        cur = _Prev(
            now,
            accounting_cpu_seconds(acct) if acct.cgroups else None,
            sched,
            resources.snapshot(acct, now, procs=procs, rss_kb=sched.rss_kb),
            schedstat.run_ns(schedstat.other_threads(acct)) if acct.threads else {},
        )
        prev = self._prev.get(role)
        self._prev[role] = cur
        if prev is None:
            return
        sched = schedstat.rates(prev.sched, cur.sched)
        task_util = sched.pop("task_cpu_util", (None, "%"))[0]
        util = None
        if acct.cgroups and cur.cpu is not None and prev.cpu is not None and cur.cpu >= prev.cpu:
            util = 100.0 * (cur.cpu - prev.cpu) / (now - prev.t)
        elif task_util is not None:
            # no cgroup: /proc/PID/stat misses children until they are reaped (nginx
            # workers), the schedstat sum over all descendant tasks does not
            util = task_util
        if util is not None:
            # a role another sampler already records goes only into the summary
            self._emit(role, "cpu_util", t, util, "%", series=role not in self.skip_cpu)
        for metric, (value, unit) in sched.items():
            self._emit(role, metric, t, value, unit)
        if acct.threads:
            # a VM: its vCPUs (the guest's own work) apart from QEMU's other threads, which do
            # the device back-end work Xen's Dom0/qemu-dm did (docs/colocation.md)
            if task_util is not None:
                self._emit(role, "vcpu_cpu_util", t, task_util, "%")
            backend = schedstat.run_util(prev.backend, cur.backend, now - prev.t)
            if backend is not None:
                self._emit(role, "backend_cpu_util", t, backend, "%")
        for metric, (value, unit) in resources.rates(prev.res, cur.res).items():
            self._emit(role, metric, t, value, unit)

    def summary(self) -> dict[tuple[str, str], Stat]:
        out = {}
        for (role, metric), values in self.points.items():
            mean = statistics.fmean(values)
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            out[(role, metric)] = Stat(
                mean, sd, sd / mean if mean else None, len(values), self.units[metric]
            )
        return out
