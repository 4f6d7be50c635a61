"""Per-environment network, disk and memory counters (the Xentop columns).

Network: `/sys/class/net/IF/statistics` of the environment's host-side interfaces
(`Accounting.net_ifaces`: veth, tap), turned round to the environment's point of view as Xentop
reports a domain's NET TX/RX: what the host end receives is what the environment sent.
Disk: the cgroup's blkio (v1) or io.stat (v2) bytes, else the sum of `/proc/PID/io`
read_bytes/write_bytes of its processes. Memory: the cgroup's usage, else the sum of VmRSS of
its processes. Readers take a `root` for unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..platforms.base import Accounting
from ..procfs import ROOT, descendants, read_text

NET_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")
# host end of a veth/tap pair -> the environment's end
_ENV_VIEW = {"rx_bytes": "tx_bytes", "tx_bytes": "rx_bytes", "rx_packets": "tx_packets",
             "tx_packets": "rx_packets"}  # fmt: skip


@dataclass
class ResourceSnapshot:
    t: float
    net: dict[str, int] | None  # NET_COUNTERS summed over interfaces; None: no interface
    disk: tuple[int, int] | None  # (read bytes, write bytes)
    mem_bytes: int | None


def _under(root: Path, absolute: str) -> Path:
    return Path(str(root).rstrip("/") + absolute)


def read_net(ifaces: list[str], root: Path = ROOT) -> dict[str, int] | None:
    """NET_COUNTERS summed over the host-side interfaces, as the environment sees them
    (`tx_bytes` = bytes the environment sent = the host end's rx_bytes)."""
    if not ifaces:
        return None
    total = dict.fromkeys(NET_COUNTERS, 0)
    found = False
    for iface in ifaces:
        stats = root / "sys" / "class" / "net" / iface / "statistics"
        for name in NET_COUNTERS:
            try:
                total[_ENV_VIEW[name]] += int((stats / name).read_text())
                found = True
            except (OSError, ValueError):
                continue
    return total if found else None


def parse_blkio(text: str) -> tuple[int, int]:
    """cgroup v1 `blkio.throttle.io_service_bytes_recursive`: 'MAJ:MIN Read N' lines."""
    read = write = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "Read":
            read += int(parts[2])
        elif len(parts) == 3 and parts[1] == "Write":
            write += int(parts[2])
    return read, write


def parse_io_stat(text: str) -> tuple[int, int]:
    """cgroup v2 `io.stat`: 'MAJ:MIN rbytes=N wbytes=N rios=N ...' lines."""
    read = write = 0
    for line in text.splitlines():
        for kv in line.split()[1:]:
            key, _, value = kv.partition("=")
            if key == "rbytes":
                read += int(value)
            elif key == "wbytes":
                write += int(value)
    return read, write


def parse_proc_io(text: str) -> tuple[int, int]:
    """`/proc/PID/io`: storage-layer read_bytes / write_bytes."""
    vals = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return int(vals.get("read_bytes", 0)), int(vals.get("write_bytes", 0))


def parse_rss_kb(status_text: str) -> int:
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0  # kernel threads and zombies have no VmRSS


def read_disk(acct: Accounting, pids: list[int], root: Path = ROOT) -> tuple[int, int] | None:
    cg = acct.cgroups
    try:
        if "blkio" in cg:
            return parse_blkio(
                _under(root, cg["blkio"])
                .joinpath("blkio.throttle.io_service_bytes_recursive")
                .read_text()
            )
        if "unified" in cg and _under(root, cg["unified"]).joinpath("io.stat").exists():
            return parse_io_stat(_under(root, cg["unified"]).joinpath("io.stat").read_text())
    except (OSError, ValueError):
        pass
    if not pids:
        return None
    read = write = 0
    for pid in pids:
        try:
            r, w = parse_proc_io(read_text(f"{str(root).rstrip('/')}/proc/{pid}/io"))
        except (OSError, ValueError):
            continue
        read, write = read + r, write + w
    return read, write


def read_mem(acct: Accounting, pids: list[int], root: Path = ROOT) -> int | None:
    cg = acct.cgroups
    for key, fname in (("memory", "memory.usage_in_bytes"), ("unified", "memory.current")):
        if key in cg:
            try:
                return int(_under(root, cg[key]).joinpath(fname).read_text())
            except (OSError, ValueError):
                pass
    if not pids:
        return None
    kb = 0
    for pid in pids:
        try:
            kb += parse_rss_kb((root / "proc" / str(pid) / "status").read_text())
        except (OSError, ValueError):
            continue
    return kb * 1024


def snapshot(
    acct: Accounting,
    t: float,
    root: Path = ROOT,
    procs: list[int] | None = None,
    rss_kb: dict[int, int] | None = None,
) -> ResourceSnapshot:
    """`procs` (processes with descendants) and `rss_kb` (VmRSS by task, from the schedstat
    snapshot) save walking and reading /proc twice per second."""
    pids = procs if procs is not None else descendants(acct.pids, root) if acct.pids else []
    # the schedstat snapshot saw every process's VmRSS only if it read all their tasks (a
    # VM's names its vCPU threads only): else read each process's status here
    if rss_kb is not None and not acct.cgroups and pids and not acct.threads:
        mem: int | None = sum(rss_kb.get(p, 0) for p in pids) * 1024
    else:
        mem = read_mem(acct, pids, root)
    return ResourceSnapshot(t, read_net(acct.net_ifaces, root), read_disk(acct, pids, root), mem)


def rates(a: ResourceSnapshot, b: ResourceSnapshot) -> dict[str, tuple[float, str]]:
    dt = b.t - a.t
    out: dict[str, tuple[float, str]] = {}
    if dt <= 0:
        return out
    if a.net is not None and b.net is not None:
        for name in NET_COUNTERS:
            unit = "B/s" if name.endswith("bytes") else "packets/s"
            out[f"net_{name}_per_s"] = (max(0, b.net[name] - a.net[name]) / dt, unit)
    if a.disk is not None and b.disk is not None:
        out["disk_read_bytes_per_s"] = (max(0, b.disk[0] - a.disk[0]) / dt, "B/s")
        out["disk_write_bytes_per_s"] = (max(0, b.disk[1] - a.disk[1]) / dt, "B/s")
    if b.mem_bytes is not None:
        out["mem_mib"] = (b.mem_bytes / 2**20, "MiB")
    return out
