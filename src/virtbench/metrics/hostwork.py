"""Where Linux does the work Xen's Dom0 did: softirq time and the ksoftirqd threads.

Bridging, NAT, veth and tap forwarding run in softirq context, either on the tail of an
interrupt or system call of whatever task was on the CPU (charged to that task) or, under
load, in the per-CPU `ksoftirqd/N` kernel threads. We sample both so a report can show how
much of the "driver domain" work exists and where it was accounted. QEMU's own I/O threads
(virtio/e1000 back ends) belong to the VM environment and are reported by the VM platform's
Accounting, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..procfs import ROOT
from .schedstat import parse_schedstat

CLK_TCK_DEFAULT = 100


@dataclass
class HostSnapshot:
    t: float
    softirq_ticks: int  # /proc/stat 'cpu' softirq column, all CPUs
    total_ticks: int
    net_softirqs: int  # NET_RX + NET_TX raised, all CPUs (/proc/softirqs)
    ksoftirqd_run_ns: int


def parse_proc_stat_cpu(text: str) -> tuple[int, int]:
    """(softirq ticks, total ticks) from the aggregate 'cpu' line of /proc/stat."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            vals = [int(x) for x in line.split()[1:]]
            # user nice system idle iowait irq softirq steal guest guest_nice; guest* are
            # already inside user/nice, so they are left out of the total
            return vals[6], sum(vals[:8])
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def parse_net_softirqs(text: str) -> int:
    total = 0
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() in ("NET_RX", "NET_TX"):
            total += sum(int(x) for x in rest.split())
    return total


def ksoftirqd_tids(root: Path = ROOT) -> list[int]:
    """Found once per cell with a /proc scan; kernel threads do not come and go."""
    tids = []
    for d in (root / "proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().startswith("ksoftirqd/"):
                    tids.append(int(d.name))
            except OSError:
                continue
    return tids


def snapshot(t: float, ksoftirqd: list[int], root: Path = ROOT) -> HostSnapshot | None:
    try:
        softirq, total = parse_proc_stat_cpu((root / "proc" / "stat").read_text())
        net = parse_net_softirqs((root / "proc" / "softirqs").read_text())
    except (OSError, ValueError):
        return None
    run = 0
    for tid in ksoftirqd:
        try:
            run += parse_schedstat((root / "proc" / str(tid) / "schedstat").read_text())[0]
        except (OSError, ValueError):
            continue
    return HostSnapshot(t, softirq, total, net, run)


def rates(a: HostSnapshot, b: HostSnapshot, ncpus: int) -> dict[str, tuple[float, str]]:
    dt = b.t - a.t
    d_total = b.total_ticks - a.total_ticks
    if dt <= 0 or d_total <= 0:
        return {}
    # softirq share of all CPU time, expressed in % of one CPU like cpu_util
    softirq_pct = 100.0 * ncpus * (b.softirq_ticks - a.softirq_ticks) / d_total
    return {
        "softirq_pct": (softirq_pct, "%"),
        "net_softirqs_per_s": ((b.net_softirqs - a.net_softirqs) / dt, "1/s"),
        "ksoftirqd_util": (100.0 * (b.ksoftirqd_run_ns - a.ksoftirqd_run_ns) / (dt * 1e9), "%"),
    }
