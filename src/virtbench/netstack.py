"""The host's TCP stack settings that move web and network figures by themselves, and what
BBR does to them. Ground level (reads /proc only): the report and doctor say it without
importing the host plumbing."""

from __future__ import annotations

from pathlib import Path

# BBR paces every connection, cubic does not; tcp_wmem/rmem's middle value is a new socket's
# buffer
CONGESTION_CONTROL = "net.ipv4.tcp_congestion_control"
SYSCTLS = (
    CONGESTION_CONTROL,
    "net.core.default_qdisc",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_slow_start_after_idle",
)
# what a BBR host does to the figures, measured (docs/network.md): said by the report's host
# table and by `virtbench doctor`
BBR_EFFECT = (
    "BBR paces every connection: over a bridge a container's replies above ~14 KB cost its"
    " server ~4x the CPU they cost under cubic; over loopback nothing; a VM guest uses its"
    " own kernel's setting"
)


def proc_path(key: str) -> str:
    """Where sysctl `key` lives under /proc/sys ('net.ipv4.x' -> 'net/ipv4/x')."""
    return key.replace(".", "/")


def read(proc: Path = Path("/proc/sys")) -> dict[str, str]:
    """This network namespace's SYSCTLS that it has (short names: no `net.ipv4.`)."""
    out = {}
    for key in SYSCTLS:
        try:
            value = (proc / proc_path(key)).read_text()
        except OSError:
            continue
        out[key.rsplit(".", 1)[1]] = " ".join(value.split())
    return out
