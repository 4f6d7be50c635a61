"""`virtbench doctor`: what this host can do, and how to get what is missing."""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import hostinfo, netstack, tools
from .metrics import disturbance


@dataclass
class Check:
    name: str
    status: str  # ok | warn | missing
    detail: str
    fix: str = ""


def kvm_check() -> Check:
    flavour = hostinfo.kvm_flavour()
    if flavour == "none":
        return Check(
            "kvm",
            "warn",
            "/dev/kvm absent: VMs will use TCG (binary translation)",
            "enable virtualization in firmware or nested virt; TCG still works",
        )
    try:
        from .platforms.vm.accel import probe_kvm
    except ImportError:
        return Check("kvm", "warn", f"/dev/kvm present ({flavour}); no VM platform to probe it")
    usable, why = probe_kvm()
    if usable:
        return Check("kvm", "ok", f"KVM ({flavour}) boots a guest: VMs use hardware assist")
    return Check("kvm", "warn", f"KVM ({flavour}) present but not usable: {why}; VMs use TCG")


def gvisor_check() -> Check | None:
    """runsc's host network, probed: what virtbench works around for which tools."""
    if tools.which("runsc") is None:
        return None
    from .platforms.container import gvisor

    blocks, what = gvisor.read_blocks()
    version = tools.version("runsc")
    if blocks is None:
        return Check("gvisor network", "warn", f"runsc {version}: not probed ({what})")
    if blocks:
        return Check("gvisor network", "ok", f"runsc {version} --network=host: {what}")
    return Check(
        "gvisor network",
        "warn",
        f"runsc {version} --network=host: read(2) on a blocking socket returns {what}"
        " (Linux waits); with 20221219 also recvfrom(2) refuses MSG_NOSIGNAL and a TCP"
        " source-address buffer panics the sandbox. iperf3 and sockperf run there with a shim that"
        " restores Linux's answers (platform label read_shim); nginx/wrk need none",
        'other tools that read(2) a blocking socket fail under runtime = "runsc"',
    )


def lxc_check() -> Check:
    """What LXC cannot do on this host (AppArmor, lxc-net) and what virtbench does instead."""
    from .platforms.container import lxc

    status, detail, fix = lxc.host_check()
    return Check("lxc", status, detail, fix)


def docker_check() -> Check | None:
    """Which dockerd virtbench would use (the user's running one, or its own on demand)."""
    if tools.which("dockerd") is None:
        return Check(
            "docker",
            "warn",
            'dockerd not installed: runtime = "docker" platforms fail',
            "apt-get install docker.io",
        )
    from .platforms.container import dockerd

    d = dockerd.current()
    if d is None:
        return Check("docker", "ok", "no dockerd running: virtbench starts its own when needed")
    who = "virtbench's" if d.owned else "the user's (used as is, never stopped)"
    return Check("docker", "ok", f"{who} dockerd answers on {d.socket}; -p via {d.nat_mode}")


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


def checks() -> list[Check]:
    out: list[Check] = []
    root = os.geteuid() == 0
    out.append(
        Check(
            "root",
            "ok" if root else "warn",
            "running as root"
            if root
            else "not root: containers, VMs, cgroups, SCHED_FIFO and disk O_DIRECT tests need root",
            "" if root else "run with sudo",
        )
    )
    cg = hostinfo.cgroup_version()
    out.append(Check("cgroups", "ok" if cg != "none" else "missing", f"cgroup {cg}"))
    out.append(Check("host virtualization", "ok", hostinfo.virtualization()))
    out.append(load_check())
    out.append(kvm_check())
    out.append(tcp_check(netstack.read()))
    if root and (gv := gvisor_check()) is not None:
        out.append(gv)
    out.append(lxc_check())
    if root and (dk := docker_check()) is not None:
        out.append(dk)
    for t in tools.TOOLS.values():
        path = tools.which(t.name)
        if path:
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
