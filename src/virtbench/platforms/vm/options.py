"""The `vm` platform's options: schema for campaigns, and checks against this host."""

from __future__ import annotations

import os
from typing import Any

from ... import hostinfo
from ...errors import PlatformError
from . import network, qemu

SCHEMA: dict[str, tuple[Any, tuple[Any, ...] | None, str]] = {
    "accel": ("auto", qemu.ACCELS, "kvm (hardware assist), tcg (binary translation), auto"),
    "vcpus": (1, None, "virtual CPUs"),
    "memory_mb": (1024, None, "guest memory in MiB"),
    "net": ("virtio", qemu.NETS, "NIC model: paravirtual virtio-net or emulated e1000"),
    "network": ("auto", network.MODES, "tap on the virtbench bridge, + NAT, or QEMU user mode"),
    "disk": ("virtio-blk", qemu.DISKS, "root disk: paravirtual virtio-blk or emulated SATA/IDE"),
    "disk_cache": ("none", qemu.DISK_CACHES, "QEMU cache mode of the root disk"),
    "disk_gb": (4, None, "root disk size in GiB (free space for disk tests)"),
    "vcpu_pin": (None, None, "host CPUs for the vCPU threads (list); a cell's cpus override"),
    "cpu_weight": (None, None, "cgroup CPU weight of the QEMU process (cpu.shares scale)"),
    "cpu_quota_us": (None, None, "CFS quota of the QEMU process per period (µs)"),
    "cpu_period_us": (None, None, "CFS period (µs), default 100000"),
    "boot_timeout": (120, None, "seconds to wait for the guest agent"),
}


def _int(name: str, where: str, value: Any, lo: int, hi: int, unit: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise PlatformError(
            f"platform '{where}': option {name} = {value!r} is not allowed; "
            f"allowed: an integer {lo}..{hi}{unit}"
        )
    return value


def validate(where: str, opts: dict[str, Any]) -> None:
    """Raise PlatformError naming the option, its value and the allowed range on this host."""
    cpus = sorted(os.sched_getaffinity(0))
    _int("vcpus", where, opts["vcpus"], 1, len(cpus), f" (this host has {len(cpus)} CPUs)")
    mem_mb = hostinfo.mem_total_bytes() // (1 << 20)
    _int("memory_mb", where, opts["memory_mb"], 64, max(64, mem_mb * 9 // 10),
         f" MiB (90% of this host's {mem_mb} MiB)")  # fmt: skip
    _int("disk_gb", where, opts["disk_gb"], 1, 1024, " GiB")
    _int("boot_timeout", where, opts["boot_timeout"], 5, 3600, " s")
    pin = opts.get("vcpu_pin")
    if pin is not None and (
        not isinstance(pin, list) or not pin or any(c not in cpus for c in pin)
    ):
        raise PlatformError(
            f"platform '{where}': option vcpu_pin = {pin!r} is not allowed; "
            f"allowed: a non-empty list of host CPUs from {cpus}"
        )
    if opts.get("cpu_weight") is not None:
        _int("cpu_weight", where, opts["cpu_weight"], 2, 262144, " (cpu.shares scale)")
    if opts.get("cpu_quota_us") is not None:
        _int("cpu_quota_us", where, opts["cpu_quota_us"], 1000, 10_000_000, " µs")
    if opts.get("cpu_period_us") is not None:
        _int("cpu_period_us", where, opts["cpu_period_us"], 1000, 1_000_000, " µs")
