"""Per-environment scheduler counters: the Linux analogue of Xenmon's gotten/wait/blocked/exe.

For every task (thread) of an environment we read `/proc/TID/schedstat` (ns on CPU, ns waiting
on a run queue, number of times run) and `/proc/TID/status` (voluntary and involuntary context
switches). Tasks come from, in order of preference: `Accounting.threads` (e.g. vCPU threads),
the environment's cgroup task list, or its PIDs plus their descendants. Two snapshots give
rates; see docs/colocation.md for how each maps to Xenmon.

All readers take a `root` so unit tests run against captured copies of real /proc files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..platforms.base import Accounting
from ..procfs import ROOT, descendants, ints, prefix, read_text


@dataclass(frozen=True)
class TaskStat:
    run_ns: int  # time on a CPU (Xenmon: gotten time)
    wait_ns: int  # time runnable but waiting for a CPU (Xenmon: waited time)
    slices: int  # times it was scheduled in (Xenmon: executions)
    vol: int  # voluntary switches (blocked on I/O, sleep, lock)
    invol: int  # involuntary switches (preempted)


@dataclass
class SchedSnapshot:
    t: float  # monotonic seconds when read
    tasks: dict[int, TaskStat] = field(default_factory=dict)
    rss_kb: dict[int, int] = field(default_factory=dict)  # VmRSS seen in each task's status


def parse_schedstat(text: str) -> tuple[int, int, int]:
    """`/proc/TID/schedstat`: 'run_ns wait_ns timeslices'."""
    run, wait, slices = text.split()[:3]
    return int(run), int(wait), int(slices)


def _field(text: str, key: str) -> int | None:
    """The integer after 'key' in a /proc status-style text (a find, not a line loop)."""
    i = text.find(key)
    if i < 0:
        return None
    return int(text[i + len(key) :].split(None, 1)[0])


def parse_switches(status_text: str) -> tuple[int, int]:
    """(voluntary, involuntary) context switches from `/proc/TID/status`."""
    vol = _field(status_text, "\nvoluntary_ctxt_switches:") or 0
    invol = _field(status_text, "\nnonvoluntary_ctxt_switches:") or 0
    return vol, invol


def read_task(tid: int, root: Path = ROOT, rss: dict[int, int] | None = None) -> TaskStat | None:
    """One task's counters; None if it exited (a normal race, not an error). If `rss` is
    given, the task's VmRSS (kB) is stored there too, saving a second read of status."""
    base = f"{prefix(root)}/proc/{tid}/"
    try:
        run, wait, slices = parse_schedstat(read_text(base + "schedstat"))
        status = read_text(base + "status")
        vol, invol = parse_switches(status)
    except (OSError, ValueError, IndexError):
        return None
    if rss is not None:
        rss[tid] = _field(status, "\nVmRSS:") or 0
    return TaskStat(run, wait, slices, vol, invol)


def tasks_of(acct: Accounting, root: Path = ROOT, procs: list[int] | None = None) -> list[int]:
    """Thread ids that make up the environment (see module docstring for the order).
    `procs`: its processes with descendants, if the caller already walked them."""
    if acct.threads:
        return list(acct.threads)
    for key, fname in (("cpu", "tasks"), ("cpuacct", "tasks"), ("unified", "cgroup.threads")):
        d = acct.cgroups.get(key)
        if d:
            tids = ints(Path(str(root).rstrip("/") + d) / fname)
            if tids:
                return tids
    tids: list[int] = []
    proc = prefix(root) + "/proc/"
    for pid in descendants(acct.pids, root) if procs is None else procs:
        try:
            tids.extend(int(t) for t in os.listdir(f"{proc}{pid}/task"))
        except (OSError, ValueError):
            continue
    return tids


def run_ns(tids: list[int], root: Path = ROOT) -> dict[int, int]:
    """ns on a CPU of each task (schedstat field 1); tasks that exited are left out."""
    out = {}
    for tid in tids:
        try:
            out[tid] = parse_schedstat(read_text(f"{prefix(root)}/proc/{tid}/schedstat"))[0]
        except (OSError, ValueError, IndexError):
            continue
    return out


def run_util(a: dict[int, int], b: dict[int, int], dt: float) -> float | None:
    """CPU % of one CPU used by the tasks alive at both ends of an interval of `dt` s."""
    common = [tid for tid in b if tid in a]
    if dt <= 0 or not common:
        return None
    return 100.0 * sum(max(0, b[t] - a[t]) for t in common) / (dt * 1e9)


def snapshot(
    acct: Accounting, t: float, root: Path = ROOT, procs: list[int] | None = None
) -> SchedSnapshot:
    snap = SchedSnapshot(t)
    for tid in tasks_of(acct, root, procs):
        st = read_task(tid, root, snap.rss_kb)
        if st is not None:
            snap.tasks[tid] = st
    return snap


def rates(a: SchedSnapshot, b: SchedSnapshot) -> dict[str, tuple[float, str]]:
    """Scheduler metrics over the interval a -> b, from tasks alive at both ends.

    run/wait/blocked % are per-task averages (they add up to 100 for each task, as Xenmon's do
    for a domain); exe/s and switches/s are sums over the environment's tasks.
    """
    dt = b.t - a.t
    common = [tid for tid in b.tasks if tid in a.tasks]
    if dt <= 0 or not common:
        return {}
    d_run = d_wait = d_slices = d_vol = d_invol = 0
    for tid in common:
        x, y = a.tasks[tid], b.tasks[tid]
        d_run += max(0, y.run_ns - x.run_ns)
        d_wait += max(0, y.wait_ns - x.wait_ns)
        d_slices += max(0, y.slices - x.slices)
        d_vol += max(0, y.vol - x.vol)
        d_invol += max(0, y.invol - x.invol)
    span_ns = dt * 1e9 * len(common)
    run_pct = min(100.0, 100.0 * d_run / span_ns)
    wait_pct = min(100.0 - run_pct, 100.0 * d_wait / span_ns)
    out: dict[str, tuple[float, str]] = {
        "sched_run_pct": (run_pct, "%"),
        "sched_wait_pct": (wait_pct, "%"),
        "sched_blocked_pct": (max(0.0, 100.0 - run_pct - wait_pct), "%"),
        "exe_per_s": (d_slices / dt, "1/s"),
        "vol_switches_per_s": (d_vol / dt, "1/s"),
        "invol_switches_per_s": (d_invol / dt, "1/s"),
        "tasks": (float(len(common)), "tasks"),
        # sum over tasks, % of one CPU: CPU utilization where there is no cgroup to read
        "task_cpu_util": (100.0 * d_run / (dt * 1e9), "%"),
    }
    if d_slices:
        out["cpu_us_per_exe"] = (d_run / 1000.0 / d_slices, "us/exe")
    return out
