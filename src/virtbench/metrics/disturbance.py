"""What else used the machine while a cell ran: its disturbance reading.

A cell's figures are only the platform's when nothing else competed for the CPUs, the
memory bus or the hypervisor's time. This module reads, from a cell's start to its end:

- steal time (/proc/stat): the hypervisor gave our vCPUs' time to another guest;
- outside CPU: the machine's busy time minus what virtbench itself used (the runner's
  process tree, reaped children included, and every process in the cgroups and process
  trees of the cell's environments), minus kernel threads. It is computed as a difference
  because /proc/stat is not namespaced but /proc/PID is: a tenant in another PID namespace
  (another container on this kernel) is invisible to a process scan and shows up only
  there. The visible outside processes are named ("by") with their share;
- PSI `some` (cpu, memory, io): the share of the cell's time some task stalled, from the
  delta of the `total` counters (not avg10: a cell is rarely exactly 10 s);
- the run queue (procs_running, sampled: mean and max) and the CPU frequency where the
  kernel exposes it.

Busy time is user + nice + system. irq and softirq are left out: a task's utime/stime
does not hold them with IRQ-time accounting (and holds them without it, so own time is then
a little over-counted: outside only under-read), and softirq is mostly the cell's own
network and block I/O (bridging, NAT, completions), which must not read as a neighbour.
guest/guest_nice are already inside user/nice.

Figures are % of the whole machine's CPU time (all CPUs), so a 2-core host where a tenant
spins one core reads 50%. A reading costs one /proc scan a second plus /proc/stat twice a
second, in a thread of the runner (its CPU is virtbench's own, so it is never outside).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..platforms.base import Accounting

ROOT = Path("/")
PSI_RESOURCES = ("cpu", "memory", "io")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PF_KTHREAD = 0x00200000  # /proc/PID/stat flags: a kernel thread
# Thresholds: between what a quiet host and a tenant's bursts read, with margin on both
# sides (the readings: docs/disturbance.md, bench/disturbance_thresholds.py)
OUTSIDE_CPU_PCT = 10.0  # well over the quiet floor, under the weakest burst cell
STEAL_PCT = 5.0  # over the most steal a quiet cell read; bursts in our VM steal nothing
# below this many seconds a cell's counters (10 ms ticks) are too coarse to judge by
MIN_SECONDS = 1.0
TOP_PROCESSES = 3  # outside processes named in "by"
UNSEEN = "unseen"  # outside CPU no visible process accounts for (another PID namespace)


# --- parsing (pure, unit-tested on captured files) -----------------------------------------
@dataclass(frozen=True)
class MachineTicks:
    """The aggregate 'cpu' line of /proc/stat (USER_HZ ticks) and procs_running."""

    busy: int  # user + nice + system
    steal: int
    total: int  # user .. steal (guest* are inside user/nice)
    procs_running: int


def parse_proc_stat(text: str) -> MachineTicks:
    busy = steal = total = 0
    running = -1
    found = False
    for line in text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]] + [0] * 10
            # user nice system idle iowait irq softirq steal guest guest_nice
            busy, steal, total, found = v[0] + v[1] + v[2], v[7], sum(v[:8]), True
        elif line.startswith("procs_running "):
            running = int(line.split()[1])
    if not found:
        raise ValueError("no aggregate 'cpu' line in /proc/stat")
    return MachineTicks(busy, steal, total, running)


def parse_psi_some_total(text: str) -> int | None:
    """`total` (µs stalled) of the `some` line of a /proc/pressure file."""
    for line in text.splitlines():
        if line.startswith("some "):
            for item in line.split()[1:]:
                key, _, value = item.partition("=")
                if key == "total":
                    return int(value)
    return None


@dataclass(frozen=True)
class Proc:
    """One process of a /proc scan (times in USER_HZ ticks, all threads)."""

    pid: int
    comm: str
    ppid: int
    start: int  # starttime: with the PID, the process's identity (PIDs are reused)
    self_ticks: int  # utime + stime
    children_ticks: int  # cutime + cstime: children it reaped
    kernel: bool

    @property
    def key(self) -> tuple[int, int]:
        return self.pid, self.start

    @property
    def total(self) -> int:
        return self.self_ticks + self.children_ticks


def parse_pid_stat(text: str) -> Proc:
    head, _, rest = text.rpartition(")")
    pid_text, _, comm = head.partition(" (")
    f = rest.split()
    # after the comm: state(0) ppid(1) ... flags(6) ... utime(11) stime(12) cutime(13)
    # cstime(14) ... starttime(19)
    return Proc(
        int(pid_text),
        comm,
        int(f[1]),
        int(f[19]),
        int(f[11]) + int(f[12]),
        int(f[13]) + int(f[14]),
        bool(int(f[6]) & PF_KTHREAD) or int(pid_text) == 2 or int(f[1]) == 2,
    )


# --- reading the host ----------------------------------------------------------------------
def read_machine(root: Path = ROOT) -> MachineTicks | None:
    try:
        return parse_proc_stat((root / "proc" / "stat").read_text())
    except (OSError, ValueError):
        return None


def read_psi(root: Path = ROOT) -> dict[str, int]:
    """Resource -> µs some task stalled on it; empty without PSI (kernel < 4.20, psi=0)."""
    out = {}
    for res in PSI_RESOURCES:
        try:
            total = parse_psi_some_total((root / "proc" / "pressure" / res).read_text())
        except (OSError, ValueError):
            continue
        if total is not None:
            out[res] = total
    return out


def read_freq_mhz(root: Path = ROOT) -> float | None:
    """Mean current frequency over the CPUs that expose cpufreq; None where none does (VMs)."""
    values = []
    cpus = root / "sys" / "devices" / "system" / "cpu"
    for f in cpus.glob("cpu[0-9]*/cpufreq/scaling_cur_freq"):
        try:
            values.append(int(f.read_text()) / 1000)
        except (OSError, ValueError):
            continue
    return sum(values) / len(values) if values else None


def uptime_ticks(root: Path = ROOT) -> int | None:
    """Now, on the clock of a process's starttime (USER_HZ ticks since boot)."""
    try:
        return int(float((root / "proc" / "uptime").read_text().split()[0]) * CLK_TCK)
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Scan:
    at: int | None  # uptime ticks just before the scan
    procs: dict[int, Proc]


def scan(root: Path = ROOT) -> Scan:
    out = Scan(uptime_ticks(root), {})
    procs = out.procs
    try:
        entries = os.listdir(root / "proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            procs[int(name)] = parse_pid_stat((root / "proc" / name / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue  # gone between listdir and read
    return out


def cgroup_pids(dirs: Iterable[str]) -> set[int]:
    """PIDs in these cgroups and the groups nested in them (LXC's payload/monitor groups)."""
    pids: set[int] = set()
    for top in dirs:
        for here, _subdirs, files in os.walk(top, followlinks=False):
            if "cgroup.procs" not in files:
                continue
            try:
                pids.update(int(x) for x in Path(here, "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
    return pids


def descendants(roots: set[int], procs: dict[int, Proc]) -> set[int]:
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out, todo = set(), [r for r in roots if r in procs]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


def own_pids(own: Own, procs: dict[int, Proc]) -> set[int]:
    """virtbench's processes in a scan: its trees and its cgroups' members with everything
    under them, and the members' parents (a container's reaper: Docker's containerd-shim,
    podman's conmon; never PID 1 or kthreadd), whose cutime holds the members' time. Not
    the reapers' other children: a subreaper may be a user's session manager."""
    members = cgroup_pids(own.cgroups)
    reapers = {procs[m].ppid for m in members if m in procs and procs[m].ppid > 2}
    return descendants(own.roots | members, procs) | (reapers & procs.keys())


@dataclass
class Own:
    """What is virtbench's on this host: process trees (the runner's, a VM's QEMU, our
    dockerd) and cgroup directories (the environments'), everything in them included."""

    roots: set[int] = field(default_factory=set)
    cgroups: set[str] = field(default_factory=set)


def own_of(accountings: Iterable[Accounting], extra_roots: Iterable[int] = ()) -> Own:
    own = Own({os.getpid(), *extra_roots})
    for acct in accountings:
        own.roots.update(acct.pids)
        # one hierarchy per group is enough (v1 mounts the same group under each controller)
        for ctl in ("cpuacct", "cpu", "unified", "pids", "memory"):
            if acct.cgroups.get(ctl):
                own.cgroups.add(acct.cgroups[ctl])
                break
    return own


# --- the ledger: CPU ticks per class between scans -----------------------------------------
@dataclass
class Ledger:
    """CPU ticks used since the first scan by virtbench (own), kernel threads and each
    visible outside command. A process's ticks are its utime+stime plus what it reaped
    (cutime+cstime): a short-lived child counts through its parent. A process that ended
    between scans had its last seen ticks counted already; its parent's cutime now holds
    them again, so they are taken back from the parent."""

    prev: dict[int, Proc] = field(default_factory=dict)
    prev_at: int | None = None  # when the previous scan began (uptime ticks)
    own_keys: set[tuple[int, int]] = field(default_factory=set)  # once own, always own
    debt: dict[tuple[int, int], int] = field(default_factory=dict)  # debits not yet met
    own: int = 0
    kernel: int = 0
    outside: dict[str, int] = field(default_factory=dict)  # comm -> ticks
    primed: bool = False

    def update(self, current: Scan, own_pids: set[int]) -> None:
        procs = current.procs
        for pid in own_pids:
            if pid in procs:
                self.own_keys.add(procs[pid].key)
        if not self.primed:
            self.prev, self.prev_at, self.primed = procs, current.at, True
            return
        credit: dict[int, int] = {}
        for pid, p in procs.items():
            before = self.prev.get(pid)
            if before is not None and before.key == p.key:
                credit[pid] = p.total - before.total
            elif self.prev_at is None or p.start >= self.prev_at - 1:
                credit[pid] = p.total  # born since the last scan: all of it is new
            else:
                credit[pid] = 0  # older, missed by the last scan (unreadable): a baseline
        for pid, gone in self.prev.items():
            if self._alive(pid, procs):
                continue
            # counted already; now in the cutime of whoever reaped it: its parent, or, when
            # the parent ended too, the parent's reaper (cutime holds the children's cutime)
            up = gone.ppid
            while up in self.prev and not self._alive(up, procs):
                up = self.prev[up].ppid
            if up in credit and procs[up].start <= gone.start:
                credit[up] -= gone.total
        for pid, ticks in credit.items():
            p = procs[pid]
            # a debit larger than the credit is carried: the scan that found the child gone
            # may have read its parent before the reap, so the cutime comes a scan later
            ticks -= self.debt.pop(p.key, 0)
            if ticks < 0:
                self.debt[p.key] = -ticks
                ticks = 0
            if p.key in self.own_keys:
                self.own += ticks
            elif p.kernel:
                self.kernel += ticks
            elif ticks:
                self.outside[p.comm] = self.outside.get(p.comm, 0) + ticks
        self.prev, self.prev_at = procs, current.at

    def _alive(self, pid: int, procs: dict[int, Proc]) -> bool:
        now, before = procs.get(pid), self.prev.get(pid)
        return now is not None and before is not None and now.key == before.key


# --- the monitor --------------------------------------------------------------------------
@dataclass
class Reading:
    """A cell's disturbance, % of the machine's CPU time unless said."""

    seconds: float
    outside_cpu_pct: float
    steal_pct: float
    kernel_cpu_pct: float
    by: list[tuple[str, float]]  # visible outside commands (and UNSEEN) with their %
    psi_some_pct: dict[str, float]
    runq_mean: float | None
    runq_max: int | None
    freq_mhz: float | None

    def label(self) -> dict[str, Any]:
        """The `disturbance` label every sample of the cell carries."""
        out: dict[str, Any] = {
            "s": round(self.seconds, 1),
            "outside_cpu_pct": round(self.outside_cpu_pct, 1),
            "steal_pct": round(self.steal_pct, 1),
            "kernel_cpu_pct": round(self.kernel_cpu_pct, 1),
            "by": ", ".join(f"{c} {p:.1f}%" for c, p in self.by) or "-",
        }
        out |= {f"psi_{r}_pct": round(v, 1) for r, v in self.psi_some_pct.items()}
        if self.runq_mean is not None:
            out |= {"runq_mean": round(self.runq_mean, 2), "runq_max": self.runq_max}
        if self.freq_mhz is not None:
            out["freq_mhz"] = round(self.freq_mhz)
        return out

    def text(self) -> str:
        psi = ", ".join(f"{r} {v:.1f}%" for r, v in self.psi_some_pct.items())
        return (
            f"outside CPU {self.outside_cpu_pct:.1f}% of the machine"
            f" ({', '.join(f'{c} {p:.1f}%' for c, p in self.by) or 'none visible'}),"
            f" steal {self.steal_pct:.1f}%, kernel threads {self.kernel_cpu_pct:.1f}%"
            + (f", PSI some {psi}" if psi else "")
            + (
                f", run queue mean {self.runq_mean:.1f} max {self.runq_max}"
                if self.runq_mean is not None
                else ""
            )
            + (f", {self.freq_mhz:.0f} MHz" if self.freq_mhz is not None else "")
        )


def judge(label: dict[str, Any]) -> str | None:
    """What disturbed a cell, with its figures, or None: a stored `disturbance` label past
    the thresholds (OUTSIDE_CPU_PCT, STEAL_PCT)."""
    if float(label.get("s") or 0) < MIN_SECONDS:
        return None
    why = []
    outside = float(label.get("outside_cpu_pct") or 0)
    if outside > OUTSIDE_CPU_PCT:
        why.append(
            f"outside CPU {outside:.1f}% > {OUTSIDE_CPU_PCT:g}% of the machine"
            f" (by {label.get('by', '-')})"
        )
    steal = float(label.get("steal_pct") or 0)
    if steal > STEAL_PCT:
        why.append(f"steal {steal:.1f}% > {STEAL_PCT:g}%")
    return "; ".join(why) or None


def what(label: dict[str, Any]) -> str:
    """The short kind of disturbance ("outside CPU", "steal", both) for the `disturbed`
    label and the report's counts."""
    kinds = []
    if float(label.get("outside_cpu_pct") or 0) > OUTSIDE_CPU_PCT:
        kinds.append("outside CPU")
    if float(label.get("steal_pct") or 0) > STEAL_PCT:
        kinds.append("steal")
    return " + ".join(kinds)


class Monitor:
    """A thread reading the host from `__enter__` to `__exit__`; `reading()` after exit.
    `own()` says what is virtbench's now (environments come and go during a cell)."""

    def __init__(
        self,
        own: Callable[[], Own] = Own,
        *,
        interval: float = 0.5,
        scan_every: int = 2,
        root: Path = ROOT,
    ) -> None:
        self.own, self.interval, self.scan_every, self.root = own, interval, scan_every, root
        self.ledger = Ledger()
        self.runq: list[int] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="vb-disturbance")
        self._first: MachineTicks | None = None
        self._last: MachineTicks | None = None
        self._psi0: dict[str, int] = {}
        self._psi1: dict[str, int] = {}
        self._t0 = self._t1 = 0.0
        self._freq: list[float] = []

    def __enter__(self) -> Monitor:
        self._t0 = time.monotonic()
        self._first = read_machine(self.root)
        self._psi0 = read_psi(self.root)
        self._scan()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._scan()
        self._last = read_machine(self.root)
        self._psi1 = read_psi(self.root)
        self._t1 = time.monotonic()

    def _loop(self) -> None:
        n = 0
        while not self._stop.wait(self.interval):
            n += 1
            m = read_machine(self.root)
            if m is not None and m.procs_running >= 0:
                # this thread is running while it reads: not a competitor
                self.runq.append(max(m.procs_running - 1, 0))
            if n % self.scan_every == 0:
                self._scan()
                freq = read_freq_mhz(self.root)
                if freq is not None:
                    self._freq.append(freq)

    def _scan(self) -> None:
        try:
            own = self.own()
        except Exception:  # noqa: BLE001 - an environment going away: last known is kept
            own = Own({os.getpid()})
        current = scan(self.root)
        pids = own_pids(own, current.procs)
        with self._lock:
            self.ledger.update(current, pids)

    def reading(self) -> Reading | None:
        runq = self.runq
        return compute(
            Snapshot(self._first, self._psi0),
            Snapshot(self._last, self._psi1),
            self.ledger,
            self._t1 - self._t0,
            (sum(runq) / len(runq), max(runq)) if runq else None,
            sum(self._freq) / len(self._freq) if self._freq else None,
        )


@dataclass(frozen=True)
class Snapshot:
    machine: MachineTicks | None
    psi: dict[str, int]


def take(root: Path = ROOT) -> Snapshot:
    return Snapshot(read_machine(root), read_psi(root))


def compute(
    first: Snapshot,
    last: Snapshot,
    ledger: Ledger,
    seconds: float,
    runq: tuple[float, int] | None = None,
    freq_mhz: float | None = None,
) -> Reading | None:
    """The reading between two snapshots, with the ledger of the scans in between."""
    a, b = first.machine, last.machine
    if a is None or b is None or b.total <= a.total:
        return None
    pct = 100.0 / (b.total - a.total)
    seen = sum(ledger.outside.values())
    # busy time nobody of ours used; what no visible process accounts for is another PID
    # namespace's tenant (or rounding: clamped at 0)
    outside = max(b.busy - a.busy - ledger.own - ledger.kernel, 0)
    by = sorted(ledger.outside.items(), key=lambda kv: -kv[1])[:TOP_PROCESSES]
    named = [(c, t * pct) for c, t in by if t * pct >= 0.1]
    if (outside - seen) * pct >= 0.1:
        named.append((UNSEEN, (outside - seen) * pct))
    named.sort(key=lambda kv: -kv[1])
    psi = {
        r: min(100.0, 100.0 * (last.psi[r] - first.psi[r]) / (seconds * 1e6))
        for r in first.psi
        if r in last.psi and seconds > 0
    }
    return Reading(
        seconds,
        outside * pct,
        100.0 * (b.steal - a.steal) * pct / 100.0,
        ledger.kernel * pct,
        named,
        psi,
        runq[0] if runq else None,
        runq[1] if runq else None,
        freq_mhz,
    )


def background(seconds: float = 1.5, root: Path = ROOT) -> Reading | None:
    """The host's load right now, with only this process as virtbench's (`doctor`)."""
    mon = Monitor(lambda: own_of([], own_daemons()), interval=0.25, scan_every=2, root=root)
    with mon:
        time.sleep(seconds)
    return mon.reading()


def own_daemons() -> list[int]:
    """virtbench's own long-lived helpers outside the runner's tree: its dockerd (started by
    some virtbench process, possibly an earlier one), with containerd and the shims under it."""
    from ..platforms.container import dockerd  # noqa: PLC0415 - metrics <-> platforms cycle

    pid = dockerd.own_pid()
    return [pid] if pid else []
