"""CPU seconds an environment has consumed, from its cgroup or its processes' /proc times."""

from __future__ import annotations

import os
from pathlib import Path

from ..platforms.base import Accounting

CLK_TCK = os.sysconf("SC_CLK_TCK")
CGROUP, PROC = "cgroup", "proc"  # where a CPU reading came from


def _proc_cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime, stime, cutime, cstime are fields 14-17 (1-based); index 11.. after the comm split
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def cgroup_cpu_seconds(cgroups: dict[str, str]) -> float | None:
    """The cgroup's CPU counter (cpuacct.usage, cpu.stat usage_usec); None without one."""
    acct = cgroups.get("cpuacct")
    if acct:
        try:
            return int(Path(acct, "cpuacct.usage").read_text()) / 1e9
        except OSError:
            return None
    unified = cgroups.get("unified")
    if unified:
        try:
            for line in Path(unified, "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
        except OSError:
            return None
    return None


def cpu_reading(acct: Accounting) -> tuple[float, str] | None:
    """Total CPU seconds an environment consumed so far and the counter they came from: its
    cgroup's (CGROUP) if it has one, else the /proc times of its processes (PROC, which miss
    children until they are reaped). The two count different things (the cgroup keeps exited
    tasks' time), so a rate may only difference two readings of the same one."""
    total = cgroup_cpu_seconds(acct.cgroups)
    if total is not None:
        return total, CGROUP
    total = processes_cpu_seconds(acct.pids)
    return None if total is None else (total, PROC)


def processes_cpu_seconds(pids: list[int]) -> float | None:
    """utime + stime (+ reaped children's) of the processes, all their threads included."""
    values = [v for v in (_proc_cpu_seconds(p) for p in pids) if v is not None]
    return sum(values) if values else None
