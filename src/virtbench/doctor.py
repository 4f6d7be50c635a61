"""`virtbench doctor`: what this host can do, and how to get what is missing.

The host-wide checks are here; each platform or engine module registers the checks of what
it needs (doctor_registry.py), and `checks()` runs them all in their order, then one line
per tool of tools.TOOLS.
"""

from __future__ import annotations

import os

from . import doctor_registry, hostinfo, netstack, tools
from .doctor_registry import Check
from .metrics import disturbance


def tcp_check(net: dict[str, str]) -> Check:
    """The host's TCP congestion control: BBR paces every connection, which over a veth costs
    a sending container far more CPU per reply than cubic (docs/network.md, measured)."""
    cc = net.get("tcp_congestion_control")
    if cc is None:
        return Check("tcp stack", "warn", "congestion control not readable")
    qdisc = net.get("default_qdisc", "?")
    if cc != "bbr":
        return Check("tcp stack", "ok", f"congestion control {cc}, default qdisc {qdisc}")
    return Check(
        "tcp stack",
        "warn",
        f"congestion control bbr (default qdisc {qdisc}): {netstack.BBR_EFFECT}; runs record"
        " it (net_stack)",
        "virtbench tune (switches it to cubic, recorded in the run, undone by --reset), or"
        " compare only runs whose TCP stack matches",
    )


def load_check(seconds: float = 1.5) -> Check:
    """The host's background load now (metrics/disturbance.py over `seconds`): what would
    disturb a cell started now, judged by the thresholds that flag cells."""
    reading = disturbance.background(seconds)
    if reading is None:
        return Check("background load", "warn", "could not read /proc/stat")
    why = disturbance.judge(reading.label())
    return Check(
        "background load",
        "warn" if why else "ok",
        reading.text(),
        f"cells measured now would be flagged disturbed ({why}); wait for the host to be"
        " quiet or find what runs"
        if why
        else "",
    )


def is_root() -> bool:
    return os.geteuid() == 0


@doctor_registry.register(10)
def root_check() -> Check:
    root = is_root()
    return Check(
        "root",
        "ok" if root else "warn",
        "running as root"
        if root
        else "not root: containers, VMs, cgroups, SCHED_FIFO and disk O_DIRECT tests need root",
        "" if root else "run with sudo",
    )


@doctor_registry.register(20)
def cgroup_check() -> Check:
    cg = hostinfo.cgroup_version()
    return Check("cgroups", "ok" if cg != "none" else "missing", f"cgroup {cg}")


@doctor_registry.register(30)
def virtualization_check() -> Check:
    return Check("host virtualization", "ok", hostinfo.virtualization())


doctor_registry.register(40)(load_check)
doctor_registry.register(60)(lambda: tcp_check(netstack.read()))


def tool_checks() -> list[Check]:
    """One line per tool: its version, or the package that provides it."""
    out: list[Check] = []
    for t in tools.TOOLS.values():
        if tools.which(t.name):
            out.append(Check(t.name, "ok", f"{tools.version(t.name)} ({t.purpose})"))
        else:
            out.append(
                Check(
                    t.name,
                    "warn" if t.optional else "missing",
                    f"not installed ({t.purpose}{', optional' if t.optional else ''})",
                    f"apt-get install {t.package}",
                )
            )
    return out


def checks() -> list[Check]:
    from .platforms import registry

    registry.load_all()  # platform and engine modules register their checks on import
    root = is_root()
    found = [
        check
        for r in sorted(doctor_registry.CHECKS, key=lambda r: r.order)
        if root or not r.needs_root
        if (check := r.fn()) is not None
    ]
    return found + tool_checks()
