"""Host facts stored with every run and shown in every report.

They double as the run's host fingerprint: `virtbench compare` (analysis/fingerprint.py)
warns about, or refuses, comparing runs whose fingerprints differ in what moves figures.
A fact the host does not expose is None; keys added later are simply absent in older runs.
"""

from __future__ import annotations

import contextlib
import os
import platform
import struct
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import netstack, tools, tune

# set by the fleet's playbook: the host's inventory name (namespaces and clones often share
# a hostname, the inventory name is what the SRE knows the host by)
FLEET_HOST_ENV = "VIRTBENCH_FLEET_HOST"


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
    tool_names: list[str] | None = None,
    tools_used: Mapping[str, Iterable[str]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`tools_used`: test case -> the tools it runs, so a comparison knows which tool
    versions matter for it. `extra`: facts measured for the run, such as the disk ceilings
    (`disk_ceilings`, `disk_ceiling_notes`: ceiling/, runner/ceilings.py) its O_DIRECT
    figures are judged against, so a stored run says which ceiling judged it."""
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
        "net_stack": netstack.read(),
        "python": platform.python_version(),
        "tool_versions": {n: tools.version(n) for n in names if tools.which(n)},
        "microcode": microcode(),
        "turbo": turbo(),
        "cpuidle_driver": idle_driver,
        "cpuidle_governor": idle_governor,
        "tuned": tune.summary(),  # `virtbench tune`: knob -> settings changed, or None
    }
    out |= hypervisor()
    if name := os.environ.get(FLEET_HOST_ENV):  # the inventory's name for this host
        out["fleet_host"] = name
    if tools_used is not None:
        out["tools_used"] = {tc: sorted(set(used)) for tc, used in sorted(tools_used.items())}
    return out | dict(extra or {})


# --- the hypervisor beneath this host (issue 14: the papers' subjects as rows) -------------
# CPUID leaf 0x40000000's 12-byte vendor signature -> the name systemd-detect-virt uses
CPUID_VENDORS = {
    "KVMKVMKVM": "kvm",
    "XenVMMXenVMM": "xen",
    "VMwareVMware": "vmware",
    "Microsoft Hv": "microsoft",
    "TCGTCGTCGTCG": "qemu",
    "VBoxVBoxVBox": "oracle",
    "bhyve bhyve": "bhyve",
    "ACRNACRNACRN": "acrn",
    "QNXQVMBSQG": "qnx",
    " lrpepyh  vr": "parallels",
}
PVM_SIGNATURE = 0x4D5650  # "PVM\0" in leaf 0x40000002 (KVM's leaves, PVM's vendor leaf)
# DMI sys_vendor / product words -> hypervisor, when neither of the above answers
DMI_VENDORS = (
    ("vmware", "vmware"),
    ("microsoft", "microsoft"),
    ("xen", "xen"),
    ("qemu", "kvm"),
    ("kvm", "kvm"),
    ("innotek", "oracle"),
)
# paravirtual device buses and drivers: what a guest talks to instead of emulated hardware
PV_BUSES = {"virtio": "/sys/bus/virtio/devices", "vmbus": "/sys/bus/vmbus/devices",
            "xen": "/sys/bus/xen/devices"}  # fmt: skip
PV_DRIVERS = ("vmxnet3", "vmw_pvscsi", "vmw_balloon", "xen-netfront", "xen-blkfront")
VIRTIO_IDS = {1: "net", 2: "block", 3: "console", 4: "rng", 5: "balloon", 8: "scsi",
              9: "9p", 16: "gpu", 18: "input", 19: "vsock", 26: "fs"}  # fmt: skip


def cpuid(leaf: int, cpu: int = 0) -> tuple[int, int, int, int] | None:
    """(eax, ebx, ecx, edx) of `leaf` through the kernel's cpuid device (root, module
    `cpuid`); None where it is not there. Read, never loaded: no module is inserted."""
    try:
        fd = os.open(f"/dev/cpu/{cpu}/cpuid", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.pread(fd, 16, leaf)
    except OSError:
        return None
    finally:
        os.close(fd)
    return struct.unpack("<4I", raw) if len(raw) == 16 else None


def cpuid_signature() -> str | None:
    regs = cpuid(0x40000000)
    if regs is None:
        return None
    text = struct.pack("<3I", *regs[1:]).rstrip(b"\0").decode("ascii", "replace")
    return text or None


def is_pvm() -> bool:
    """PVM (pagetable-based VM, KVM's leaves with PVM's vendor leaf), or its guest flag."""
    regs = cpuid(0x40000002)
    if regs is not None and PVM_SIGNATURE in regs[1:]:
        return True
    flags = next((ln for ln in (_read("/proc/cpuinfo") or "").splitlines()
                  if ln.startswith("flags")), "")  # fmt: skip
    return any("pvm_guest" in f for f in flags.split())


def _detect_virt(*args: str) -> str | None:
    try:
        out = subprocess.run(["systemd-detect-virt", *args], capture_output=True, text=True,
                             timeout=5)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def paravirt_devices() -> list[str]:
    """Paravirtual devices the guest uses: virtio-net, vmbus, xen, vmxnet3 ..."""
    found: set[str] = set()
    for bus, path in PV_BUSES.items():
        with contextlib.suppress(OSError):
            for dev in Path(path).iterdir():
                if bus != "virtio":
                    found.add(bus)
                    continue
                raw = _read(str(dev / "device")) or ""
                with contextlib.suppress(ValueError):
                    found.add(f"virtio-{VIRTIO_IDS.get(int(raw, 16), int(raw, 16))}")
    for drv in PV_DRIVERS:
        d = Path("/sys/bus/pci/drivers") / drv
        if d.is_dir() and any(p.name.startswith("0000:") for p in d.iterdir()):
            found.add(drv)
    return sorted(found)


def classify(
    detect_vm: str | None, signature: str | None, dmi: str, pvm: bool, xen_type: str | None
) -> str:
    """One name for the hypervisor: PVM first (it answers as KVM), then systemd-detect-virt,
    the CPUID signature, DMI; 'none' on bare metal."""
    if pvm:
        return "pvm"
    if detect_vm and detect_vm != "none":
        return detect_vm
    if signature:
        return CPUID_VENDORS.get(signature, signature.lower())
    if xen_type:
        return "xen"
    low = dmi.lower()
    return next((name for word, name in DMI_VENDORS if word in low), "none")


def hypervisor() -> dict[str, Any]:
    """What this host's kernel runs on, with the evidence: systemd-detect-virt --vm, the
    CPUID hypervisor leaf, DMI vendor/product, Xen's guest type (PV, HVM, PVH) and the
    paravirtual devices in use. A container's host answers for the machine beneath it."""
    signature = cpuid_signature()
    dmi = {k: _read(f"/sys/class/dmi/id/{k}") for k in ("sys_vendor", "product_name")}
    xen_type = _read("/sys/hypervisor/guest_type") or (
        "PV" if _read("/sys/hypervisor/type") == "xen" and not signature else None
    )
    detect_vm = _detect_virt("--vm")
    pvm = is_pvm()
    name = classify(detect_vm, signature, " ".join(v for v in dmi.values() if v), pvm, xen_type)
    evidence: dict[str, Any] = {
        "systemd_detect_virt": detect_vm,
        "cpuid_signature": signature,
        "dmi_vendor": dmi["sys_vendor"],
        "dmi_product": dmi["product_name"],
        "xen_guest_type": xen_type,
        "paravirt_devices": paravirt_devices(),
    }
    return {"hypervisor": name, "hypervisor_evidence": evidence}
