"""Load generators on the host: pinned to the client CPUs, their CPU use measured (wait4 per
process, /proc/stat per CPU), so a saturated client can be told apart from a saturated server."""

from __future__ import annotations

import os
import resource
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..platforms.base import ExecResult
from ..platforms.procs import run_host
from ..validity import CLIENT_SATURATED
from . import netpath
from .remote import MAX_SESSIONS

if TYPE_CHECKING:
    from ..workloads.base import RunContext


def raise_nofile() -> int:
    """Raise our soft fd limit to the hard limit (children inherit it); return the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@dataclass
class ClientRun:
    result: ExecResult
    cpu_util: float  # share of the CPUs the client could use, 0..1 (per-thread tools: of N)

    @property
    def saturated(self) -> bool:
        return self.cpu_util > CLIENT_SATURATED


def usable_cpus(ctx: RunContext, threads: int) -> int:
    """CPUs a client with `threads` threads can keep busy under its pinning."""
    return max(1, min(_pinned_or_own_cpus(ctx), threads))


def _pinned_or_own_cpus(ctx: RunContext) -> int:
    """The client CPUs, else (unpinned) the CPUs this process may run on."""
    return len(ctx.client_cpus) if ctx.client_cpus else len(os.sched_getaffinity(0))


def _busy(res: ExecResult) -> float:
    return (res.cpu_user_s or 0.0) + (res.cpu_sys_s or 0.0)


def run_client(
    argv: list[str],
    ctx: RunContext,
    *,
    threads: int = 1,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> ClientRun:
    """Run a load generator on the host pinned to the client CPUs; measure its CPU use.
    With a client host (ctx.remote) it runs there, judged by the CPUs it had there."""
    if ctx.remote is not None:
        res, out = ctx.remote.run(argv, ctx.client_cpus, timeout, env)
        usable = max(1, min(len(out.get("cpus") or [1]), threads))
        return ClientRun(res, _busy(res) / max(res.elapsed_s, 1e-6) / usable)
    res = run_host(netpath.wrap(argv, ctx), cpus=ctx.client_cpus, timeout=timeout, env=env)
    util = _busy(res) / max(res.elapsed_s, 1e-6) / usable_cpus(ctx, threads)
    return ClientRun(res, util)


def client_slots(ctx: RunContext, processes: int) -> list[list[int] | None]:
    """The CPU each of `processes` single-threaded clients is pinned to: one per client CPU
    (round robin when there are more processes than CPUs); None = unpinned (no client CPUs
    configured). `processes` 0 means one per client CPU (1 when unpinned)."""
    cpus = ctx.client_cpus
    k = processes or (len(cpus) if cpus else 1)
    if not cpus:
        return [None] * k
    return [[cpus[i % len(cpus)]] for i in range(k)]


def client_cpu_count(ctx: RunContext) -> int:
    """CPUs the clients of one step spread over: the client CPUs, else this host's (unpinned);
    on a client host without client CPUs, the CPUs its last run had there (CellClient.facts,
    filled by the solo peak's sweep a load=PCT step runs first), one before it ran."""
    if ctx.client_cpus or ctx.remote is None:
        return _pinned_or_own_cpus(ctx)
    if cpus := (getattr(ctx.remote, "facts", None) or {}).get("cpus"):
        return len(cpus)
    ctx.log("client host: its CPUs are not known before a client ran there; counted as 1")
    return 1


def process_limit(ctx: RunContext) -> int | None:
    """Most client processes one environment may run at once, None: no limit of the host.
    On a client host, its share of the SSH sessions (remote.MAX_SESSIONS) with the cell's
    other environments that run their clients there at the same time, one at the least."""
    if ctx.remote is None:
        return None
    return max(1, MAX_SESSIONS // max(1, ctx.remote.parties))


def cpu_times(cpus: set[int]) -> dict[int, tuple[int, int]]:
    """cpu -> (busy, total) jiffies from /proc/stat (busy counts every task and irq work)."""
    out: dict[int, tuple[int, int]] = {}
    with suppress(OSError, ValueError):
        for line in Path("/proc/stat").read_text().splitlines():
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                continue
            v = [int(x) for x in fields[:8]]
            idle = v[3] + v[4]  # idle + iowait
            out[int(name[3:])] = (sum(v) - idle, sum(v))
    return out


def busiest_share(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> float:
    """The highest busy share among the CPUs over the interval (0..1)."""
    shares = [
        (after[c][0] - before[c][0]) / (after[c][1] - before[c][1])
        for c in before
        if c in after and after[c][1] > before[c][1]
    ]
    return max(shares, default=0.0)


@dataclass
class ParallelRun:
    runs: list[ClientRun]  # per process; cpu_util = load of the CPU(s) it shared
    cpu_util: float  # the busiest client CPU's share, 0..1 (what decides saturation)
    # how busy the client CPUs were with ANYTHING (other tasks, softirq work ksoftirqd took
    # over): context for a noisy step, not a verdict (the send-rate check catches a client
    # that got too little CPU)
    cpu_busy: float = 0.0

    @property
    def saturated(self) -> bool:
        return self.cpu_util > CLIENT_SATURATED


def cpu_loads(results: list[ExecResult], slots: list[list[int] | None]) -> list[float]:
    """Per process: the share of its CPU that ALL client processes pinned there used (so two
    processes sharing one CPU at 50 % each both read 100 %). Unpinned processes are judged
    together against the CPUs they could use."""
    load: dict[int, float] = {}
    free_busy, free_n = 0.0, 0
    for res, slot in zip(results, slots, strict=True):
        rate = _busy(res) / max(res.elapsed_s, 1e-6)
        if slot:
            for cpu in slot:
                load[cpu] = load.get(cpu, 0.0) + rate / len(slot)
        else:
            free_busy, free_n = free_busy + rate, free_n + 1
    free = free_busy / max(1, min(free_n, len(os.sched_getaffinity(0)))) if free_n else 0.0
    return [max(load[c] for c in slot) if slot else free for slot in slots]


def run_clients(
    argvs: list[list[str]],
    slots: list[list[int] | None],
    *,
    timeout: float | None = None,
    stagger_s: float = 0.0,
    remote=None,
    ctx: RunContext | None = None,
) -> ParallelRun:
    """Run several load generator processes side by side (process i pinned to slots[i],
    started i * stagger_s after the first, so equal open-loop schedules interleave); on
    the client host `remote` (ctx.remote) if given, else on this host on the cell's client
    path (`ctx`: inside the client netns for client_path = bridge)."""
    if ctx is not None:
        remote = ctx.remote if remote is None else remote
        if remote is None:
            argvs = [netpath.wrap(a, ctx) for a in argvs]
    results: list[ExecResult | None] = [None] * len(argvs)
    errors: list[BaseException] = []
    remote_busy: list[float] = []

    def one(i: int) -> None:
        try:
            time.sleep(i * stagger_s)
            if remote is not None:
                results[i], out = remote.run(argvs[i], slots[i], timeout)
                remote_busy.append(float(out.get("busy") or 0.0))
                return
            results[i] = run_host(argvs[i], cpus=slots[i], timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(argvs))]
    watched = {c for slot in slots for c in (slot or os.sched_getaffinity(0))}
    before = cpu_times(watched)
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    busy = busiest_share(before, cpu_times(watched))
    if remote is not None:  # the client host's CPUs, read there by each process's wrapper
        busy = max(remote_busy, default=0.0)
    if errors:
        raise errors[0]
    done = [r for r in results if r is not None]
    loads = cpu_loads(done, slots)
    runs = [ClientRun(r, u) for r, u in zip(done, loads, strict=True)]
    return ParallelRun(runs, max(loads, default=0.0), busy)
