"""The `vm` platform's options: schema for campaigns, and checks against this host."""

from __future__ import annotations

import os
from collections.abc import Callable
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


class OptionProblem(PlatformError):
    """One bad option: the key, what is wrong, what is allowed (for the campaign loader)."""

    def __init__(self, where: str, key: str, value: Any, allowed: str) -> None:
        super().__init__(
            f"platform '{where}': option {key} = {value!r} is not allowed; allowed: {allowed}"
        )
        self.key, self.value, self.allowed = key, value, allowed


def _int(name: str, where: str, value: Any, lo: int, hi: int, unit: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise OptionProblem(where, name, value, f"an integer {lo}..{hi}{unit}")
    return value


def _checks(where: str, opts: dict[str, Any]) -> list[Callable[[], object]]:
    cpus = sorted(os.sched_getaffinity(0))
    mem_mb = hostinfo.mem_total_bytes() // (1 << 20)
    checks: list[Callable[[], object]] = [
        lambda: _int("vcpus", where, opts["vcpus"], 1, len(cpus),
                     f" (this host has {len(cpus)} CPUs)"),
        lambda: _int("memory_mb", where, opts["memory_mb"], 64, max(64, mem_mb * 9 // 10),
                     f" MiB (90% of this host's {mem_mb} MiB)"),
        lambda: _int("disk_gb", where, opts["disk_gb"], 1, 1024, " GiB"),
        lambda: _int("boot_timeout", where, opts["boot_timeout"], 5, 3600, " s"),
        lambda: _pin(where, opts.get("vcpu_pin"), cpus),
    ]  # fmt: skip
    for key, lo, hi, unit in (
        ("cpu_weight", 2, 262144, " (cpu.shares scale)"),
        ("cpu_quota_us", 1000, 10_000_000, " µs"),
        ("cpu_period_us", 1000, 1_000_000, " µs"),
    ):
        if opts.get(key) is not None:
            checks.append(lambda k=key, lo=lo, hi=hi, u=unit: _int(k, where, opts[k], lo, hi, u))
    return checks


def _pin(where: str, pin: Any, cpus: list[int]) -> None:
    if pin is not None and (
        not isinstance(pin, list) or not pin or any(c not in cpus for c in pin)
    ):
        raise OptionProblem(where, "vcpu_pin", pin, f"a non-empty list of host CPUs from {cpus}")


def problems(where: str, opts: dict[str, Any]) -> list[OptionProblem]:
    """Every bad option (defaults filled in for what `opts` leaves out)."""
    full = {k: v[0] for k, v in SCHEMA.items()} | opts
    found = []
    for check in _checks(where, full):
        try:
            check()
        except OptionProblem as exc:
            found.append(exc)
    return found


def validate(where: str, opts: dict[str, Any]) -> None:
    """Raise PlatformError naming the option, its value and the allowed range on this host."""
    found = problems(where, opts)
    if found:
        raise found[0]
