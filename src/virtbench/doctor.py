"""`virtbench doctor`: what this host can do, and how to get what is missing."""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import hostinfo, tools


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
    out.append(kvm_check())
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
