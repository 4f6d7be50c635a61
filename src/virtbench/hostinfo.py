"""Host facts stored with every run and shown in every report.

They double as the run's host fingerprint: `virtbench compare` (analysis/fingerprint.py)
warns about, or refuses, comparing runs whose fingerprints differ in what moves figures.
A fact the host does not expose is None; keys added later are simply absent in older runs.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import tools, tune


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def cgroup_version() -> str:
    """'v2' (unified), 'v1' (legacy or hybrid: controllers on v1 hierarchies)."""
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return "v2"
    if Path("/sys/fs/cgroup/cpu").exists() or Path("/sys/fs/cgroup/cpu,cpuacct").exists():
        return "v1"
    return "none"


def virtualization() -> str:
    """What this host itself runs on (a VM, a container, or none)."""
    try:
        out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, timeout=5)
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    flags = _read("/proc/cpuinfo") or ""
    if " hypervisor" in flags:
        vendor = _read("/sys/class/dmi/id/sys_vendor") or "unknown hypervisor"
        return f"vm ({vendor})"
    return "none"


def kvm_flavour() -> str:
    """Which KVM module backs /dev/kvm: intel, amd, pvm, or none."""
    if not Path("/dev/kvm").exists():
        return "none"
    for name, mod in (("intel", "kvm_intel"), ("amd", "kvm_amd"), ("pvm", "kvm_pvm")):
        if Path(f"/sys/module/{mod}").exists():
            return name
    return "unknown"


def smt() -> str | None:
    return _read("/sys/devices/system/cpu/smt/control")


def governor() -> str | None:
    return _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def microcode() -> str | None:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("microcode"):
            return line.split(":", 1)[1].strip()
    return None


def turbo() -> str | None:
    """'on' / 'off': cpufreq boost (acpi-cpufreq, amd-pstate) or intel_pstate's no_turbo."""
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    return None


def cpuidle() -> tuple[str | None, str | None]:
    """(driver, governor) of the C-state machinery; driver 'none' means no C-states used."""
    base = "/sys/devices/system/cpu/cpuidle"
    governor = _read(f"{base}/current_governor") or _read(f"{base}/current_governor_ro")
    return _read(f"{base}/current_driver"), governor


def thp() -> str | None:
    raw = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if raw and "[" in raw:
        return raw.split("[", 1)[1].split("]", 1)[0]
    return raw


def mem_total_bytes() -> int:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def facts(
    tool_names: list[str] | None = None, tools_used: Mapping[str, Iterable[str]] | None = None
) -> dict[str, Any]:
    """`tools_used`: test case -> the tools it runs, so a comparison knows which tool
    versions matter for it."""
    names = tool_names if tool_names is not None else sorted(tools.TOOLS)
    idle_driver, idle_governor = cpuidle()
    out = {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "memory_bytes": mem_total_bytes(),
        "kernel": platform.release(),
        "os": (_read("/etc/debian_version") and f"Debian {_read('/etc/debian_version')}")
        or platform.platform(),
        "virtualization": virtualization(),
        "kvm": kvm_flavour(),
        "cgroup": cgroup_version(),
        "governor": governor(),
        "smt": smt(),
        "thp": thp(),
        "python": platform.python_version(),
        "tool_versions": {n: tools.version(n) for n in names if tools.which(n)},
        "microcode": microcode(),
        "turbo": turbo(),
        "cpuidle_driver": idle_driver,
        "cpuidle_governor": idle_governor,
        "tuned": tune.summary(),  # `virtbench tune`: knob -> settings changed, or None
    }
    if tools_used is not None:
        out["tools_used"] = {tc: sorted(set(used)) for tc, used in sorted(tools_used.items())}
    return out
