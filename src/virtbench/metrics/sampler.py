"""Samples an environment's CPU use once a second while a cell runs, into the store's series.

Reads only /proc and cgroup files named by `Platform.accounting()`, so it costs a few file
reads per environment per second.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..platforms.base import Accounting, Platform

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _proc_cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime, stime, cutime, cstime are fields 14-17 (1-based); index 11.. after the comm split
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def _cgroup_cpu_seconds(cgroups: dict[str, str]) -> float | None:
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


def cpu_seconds(platform: Platform) -> float | None:
    """Total CPU seconds consumed so far by the environment (cgroup if it has one, else PIDs)."""
    return accounting_cpu_seconds(platform.accounting())


def accounting_cpu_seconds(acct: Accounting) -> float | None:
    """`cpu_seconds` for an Accounting already fetched (the co-location sampler reuses it)."""
    total = _cgroup_cpu_seconds(acct.cgroups)
    if total is not None:
        return total
    values = [v for v in (_proc_cpu_seconds(p) for p in acct.pids) if v is not None]
    return sum(values) if values else None


class CpuSampler:
    """Background thread: every `interval` s, record each role's CPU utilization in %."""

    def __init__(
        self,
        roles: dict[str, Platform],
        record: Callable[[str, float, float, str, str], None],
        interval: float = 1.0,
    ) -> None:
        self.roles, self.record, self.interval = roles, record, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="vb-sampler")

    def __enter__(self) -> CpuSampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        last: dict[str, tuple[float, float]] = {}
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            for role, platform in self.roles.items():
                try:
                    used = cpu_seconds(platform)
                except Exception:  # noqa: BLE001 - a vanished process must not kill the run
                    used = None
                if used is None:
                    continue
                if role in last:
                    t_prev, u_prev = last[role]
                    if now > t_prev and used >= u_prev:
                        util = 100.0 * (used - u_prev) / (now - t_prev)
                        self.record("cpu_util", now - self._t0, util, "%", role)
                last[role] = (now, used)
