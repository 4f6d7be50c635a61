"""The cell's one sampler: once a second, every environment of the cell on one time axis.

The runner owns one per cell and hands it to the scenario (`ScenarioEnv.sampler`). Every role
it watches gets `cpu_util` at a few file reads a second (metrics.cputime). A scenario that sets
a scene (co-location) opens a `window` over its roles: while it is open they are also read in
detail (scheduler counters, network/disk/memory, a VM's vCPU and back-end threads:
metrics.schedstat, metrics.resources), plus role `host` for the softirq work Linux does on
behalf of all of them (metrics.hostwork), and the window keeps every point with the time it
covers, so the scenario can store each figure with its spread per point the workload served
(`summary_samples`: one file size, one sweep step; never averaged across them).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import labelkeys
from ..platforms.base import Accounting, Platform
from ..procfs import descendants, other_threads
from ..results import Sample
from . import hostwork, resources, schedstat
from .cputime import CGROUP, cpu_reading

HOST_ROLE = "host"
# a series point: (metric, t_seconds_on_the_cell_axis, value, unit, role)
Record = Callable[[str, float, float, str, str], None]
Reading = tuple[str, float, str]  # (metric, value, unit)
# a point the workload served: its dimension labels, and its start and end on the cell's axis
Span = tuple[dict[str, Any], float, float]
# a reading counts for a point when the second it covers lies inside the point's window, give
# or take this much (the tick and the workload's start are not in step)
EDGE_S = 0.1
SUMMARY_STAT = "mean of 1 s samples"


@dataclass
class Stat:
    mean: float
    stdev: float | None  # None from one reading: it has no spread (analysis.stats.summarize)
    cov: float | None  # stdev / mean; None when the mean is 0 or there is one reading
    n: int
    unit: str


@dataclass
class _Detail:
    t: float
    sched: schedstat.SchedSnapshot
    res: resources.ResourceSnapshot
    backend: dict[int, int]  # run ns of a VM's non-vCPU threads (empty for other platforms)


@dataclass
class _Role:
    platform: Platform
    # (t, CPU seconds, cputime source) of the previous tick's reading; None after a miss
    cpu: tuple[float, float, str] | None = None
    detail: _Detail | None = None  # last detailed snapshot, while in a window


@dataclass
class Window:
    """The roles of one scene, read in detail while open; every point is kept with the
    (start, end] on the cell's axis its rate covers."""

    roles: set[str] = field(default_factory=set)
    added: set[str] = field(default_factory=set)  # roles it brought in; dropped when it closes
    points: dict[tuple[str, str], list[tuple[float, float, float]]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    ksoftirqd: list[int] = field(default_factory=list)
    host_prev: hostwork.HostSnapshot | None = None
    last_t: float = 0.0  # cell-axis time of its previous reading (its rates start there)

    def keep(
        self, role: str, metric: str, value: float, unit: str, span: tuple[float, float]
    ) -> None:
        self.points.setdefault((role, metric), []).append((span[0], span[1], value))
        self.units[metric] = unit

    def summary(self) -> dict[tuple[str, str], Stat]:
        """Mean, stdev, CoV and count per (role, metric) over the whole window."""
        return {
            key: _stat([v for _a, _b, v in pts], self.units[key[1]])
            for key, pts in self.points.items()
        }

    def per_point(self, spans: list[Span]) -> list[tuple[str, str, dict[str, Any], Stat]]:
        """(role, metric, the point's labels, stat) per point the workload served: only the
        readings whose second lies inside the point's window, so nothing is averaged across
        points (file sizes, steps) and the gaps between them (set-up, a server restart) are
        in none. Points with the same labels are one point. No spans: the whole window."""
        if not spans:
            return [(r, m, {}, st) for (r, m), st in self.summary().items()]
        by_labels: dict[str, tuple[dict[str, Any], list[tuple[float, float]]]] = {}
        for labels, a, b in spans:
            key = repr(sorted(labels.items()))
            by_labels.setdefault(key, (labels, []))[1].append((a, b))
        out = []
        for (role, metric), pts in self.points.items():
            for labels, windows in by_labels.values():
                values = [
                    v
                    for t0, t1, v in pts
                    if any(t0 >= a - EDGE_S and t1 <= b + EDGE_S for a, b in windows)
                ]
                if values:
                    out.append((role, metric, dict(labels), _stat(values, self.units[metric])))
        return out


def _stat(values: list[float], unit: str) -> Stat:
    mean = statistics.fmean(values)
    if len(values) < 2:
        # one reading (a 2 s sweep step often has one whole 1 s interval) has no spread: a
        # stdev and CoV of 0 would claim a perfectly steady point
        return Stat(mean, None, None, 1, unit)
    sd = statistics.stdev(values)
    return Stat(mean, sd, sd / mean if mean else None, len(values), unit)


def summary_samples(window: Window, spans: list[Span], labels: dict[str, Any]) -> list[Sample]:
    """One sample per role, metric and served point: the mean of its 1 s readings, with their
    stdev, CoV and count, and the point's dimension labels (file_size_kb, step, ...)."""
    return [
        Sample(
            metric,
            st.mean,
            st.unit,
            False,
            role,
            labels
            | point
            | {
                labelkeys.STAT: SUMMARY_STAT,
                labelkeys.STDEV: st.stdev,
                labelkeys.COV: st.cov,
                labelkeys.N: st.n,
            },
        )
        for role, metric, point, st in sorted(
            window.per_point(spans), key=lambda x: (x[0], x[1], repr(sorted(x[2].items())))
        )
    ]


class Sampler:
    """Background thread; roles may be added while it runs (start-up storms). Not running
    (never entered), it records nothing and its windows stay empty."""

    def __init__(
        self, record: Record = lambda *a: None, *, interval: float = 1.0, t0: float | None = None
    ) -> None:
        self.record, self.interval = record, interval
        self.t0 = time.monotonic() if t0 is None else t0  # the cell's time axis starts here
        self.own_cpu_s = 0.0  # CPU time this sampler itself used (overhead accounting)
        self.ticks = 0
        self._roles: dict[str, _Role] = {}
        self._window: Window | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="vb-sampler")

    def add(self, role: str, platform: Platform) -> None:
        """Watch one more environment; inside an open window it is read in detail too."""
        with self._lock:
            self._roles[role] = _Role(platform)
            if self._window is not None:
                # read it now, as window() does its roles: unprimed, a storm newcomer's
                # first tick only set its baseline and its first second after ready was lost
                self._prime(self._roles[role], time.monotonic(), detailed=True)
                self._window.roles.add(role)
                self._window.added.add(role)

    def accountings(self) -> list[Accounting]:
        """Every watched environment's accounting now (what is virtbench's during the cell:
        metrics.disturbance)."""
        with self._lock:
            platforms = [r.platform for r in self._roles.values()]
        out = []
        for platform in platforms:
            try:
                out.append(platform.accounting())
            except Exception:  # noqa: BLE001 - torn down or not up yet: nothing of it runs
                continue
        return out

    @contextmanager
    def window(self, roles: dict[str, Platform]) -> Iterator[Window]:
        """Read `roles` (watched from now on if they were not) and the host in detail until
        the block ends; the roles it brought in are dropped then (they are torn down next)."""
        win = Window()
        with self._lock:
            if self._window is not None:
                raise RuntimeError("a sampler window is already open")
            win.ksoftirqd = hostwork.ksoftirqd_tids()
            now = time.monotonic()
            for role, platform in roles.items():
                if role not in self._roles:
                    self._roles[role] = _Role(platform)
                    win.added.add(role)
                win.roles.add(role)
                # rates from the window's start: a watched role's CPU reading would otherwise
                # run from the tick before it and be kept as the window's first second
                self._roles[role].cpu = None
                self._prime(self._roles[role], now, detailed=True)
            win.host_prev = hostwork.snapshot(now, win.ksoftirqd)
            win.last_t = now - self.t0
            self._window = win
        try:
            yield win
        finally:
            with self._lock:
                self._window = None
                for role in win.added:
                    self._roles.pop(role, None)
                for r in self._roles.values():
                    r.detail = None

    def __enter__(self) -> Sampler:
        with self._lock:
            now = time.monotonic()
            for r in self._roles.values():
                self._prime(r, now, detailed=False)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def tick(self) -> None:
        """Read every role and record rates against its previous reading."""
        c0 = time.thread_time()
        now = time.monotonic()
        t = now - self.t0
        with self._lock:
            win = self._window
            for role, r in list(self._roles.items()):
                try:
                    readings = self._read(r, now, detailed=win is not None and role in win.roles)
                except Exception:  # noqa: BLE001 - a vanished environment must not kill the cell
                    # no reading this tick: the next starts afresh, or its rate would span two
                    # ticks and be kept (and time-stamped) as the last one's
                    r.cpu = r.detail = None
                    continue
                for metric, value, unit in readings:
                    self._emit(win, role, metric, t, value, unit)
            if win is not None:
                self._host(win, now, t)
                win.last_t = t
        self.ticks += 1
        self.own_cpu_s += time.thread_time() - c0

    def _emit(
        self, win: Window | None, role: str, metric: str, t: float, value: float, unit: str
    ) -> None:
        self.record(metric, t, value, unit, role)
        if win is not None and (role in win.roles or role == HOST_ROLE):
            win.keep(role, metric, value, unit, (win.last_t, t))

    @staticmethod
    def _prime(r: _Role, now: float, detailed: bool) -> None:
        """A first reading where a role has none yet, so the next tick gives rates."""
        try:
            acct = r.platform.accounting()
            if r.cpu is None and (cpu := cpu_reading(acct)) is not None:
                r.cpu = (now, *cpu)
            if detailed:
                r.detail = _detail(acct, now)
        except Exception:  # noqa: BLE001 - not there yet: the first tick reads it instead
            r.detail = None

    def _read(self, r: _Role, now: float, detailed: bool) -> list[Reading]:
        acct = r.platform.accounting()
        reading, prev = cpu_reading(acct), r.cpu
        from_cgroup = reading is not None and reading[1] == CGROUP
        # a rate only against the previous tick's reading of the same counter: a miss (no
        # counter read) or a source change (a transient cgroup error reads /proc, a task sum
        # far below the cgroup's cumulative count) restarts the baseline, a gap, not a rate
        r.cpu = None if reading is None else (now, *reading)
        util = None
        if reading is not None and prev is not None and prev[2] == reading[1]:
            cpu = reading[0]
            if now > prev[0] and cpu >= prev[1]:
                util = 100.0 * (cpu - prev[1]) / (now - prev[0])
        if not detailed:
            return [] if util is None else [("cpu_util", util, "%")]
        task_util, more = self._read_detail(r, acct, now)
        if not from_cgroup and not acct.threads:
            # no cgroup CPU counter (no cgroup, or one without cpuacct): /proc/PID/stat misses
            # children until they are reaped (nginx workers), the schedstat sum over all
            # descendant tasks does not. A platform that names its threads (a VM's vCPUs) has
            # only those in the task sum: its processes' own times (every QEMU thread) stay
            util = task_util
        return ([] if util is None else [("cpu_util", util, "%")]) + more

    def _read_detail(
        self, r: _Role, acct: Accounting, now: float
    ) -> tuple[float | None, list[Reading]]:
        cur, prev = _detail(acct, now), r.detail
        r.detail = cur
        if prev is None:
            return None, []
        sched = schedstat.rates(prev.sched, cur.sched)
        task_util = sched.pop("task_cpu_util", (None, "%"))[0]
        out = [(metric, value, unit) for metric, (value, unit) in sched.items()]
        if acct.threads:
            # a VM: its vCPUs (the guest's own work) apart from QEMU's other threads, which do
            # the device back-end work Xen's Dom0/qemu-dm did (docs/colocation.md)
            if task_util is not None:
                out.append(("vcpu_cpu_util", task_util, "%"))
            backend = schedstat.run_util(prev.backend, cur.backend, now - prev.t)
            if backend is not None:
                out.append(("backend_cpu_util", backend, "%"))
        res = resources.rates(prev.res, cur.res)
        out += [(metric, value, unit) for metric, (value, unit) in res.items()]
        return task_util, out

    def _host(self, win: Window, now: float, t: float) -> None:
        snap = hostwork.snapshot(now, win.ksoftirqd)
        if snap is not None and win.host_prev is not None:
            for metric, (value, unit) in hostwork.rates(
                win.host_prev, snap, os.cpu_count() or 1
            ).items():
                self._emit(win, HOST_ROLE, metric, t, value, unit)
        win.host_prev = snap


def _detail(acct: Accounting, now: float) -> _Detail:
    procs = descendants(acct.pids) if acct.pids else []  # one walk per reading
    sched = schedstat.snapshot(acct, now, procs=None if acct.threads else procs)
    return _Detail(
        now,
        sched,
        resources.snapshot(acct, now, procs=procs, rss_kb=sched.rss_kb),
        schedstat.run_ns(other_threads(acct.pids, acct.threads)) if acct.threads else {},
    )
