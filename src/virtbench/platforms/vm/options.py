"""The `vm` platform's options: schema for campaigns, and checks against this host."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ... import hostinfo, parsing
from ...parsing import ParseError
from ..options import OptionError, OptionReader, PlatformOptions, Schema
from . import network, qemu

BAD = "is not allowed"  # every VM option's problem, in the loader's words

SCHEMA: Schema = {
    "accel": ("auto", qemu.ACCELS, "kvm (hardware assist), tcg (binary translation), auto"),
    "vcpus": (1, None, "virtual CPUs"),
    "memory_mb": (1024, None, "guest memory in MiB"),
    "net": ("virtio", qemu.NETS, "NIC model: paravirtual virtio-net or emulated e1000"),
    "network": ("auto", network.MODES, "tap on the virtbench bridge, + NAT, or QEMU user mode"),
    "disk": ("virtio-blk", qemu.DISKS, "root disk: paravirtual virtio-blk or emulated SATA/IDE"),
    "disk_cache": (
        "none",
        qemu.DISK_CACHES,
        "QEMU cache mode of the root disk; none/directsync: guest O_DIRECT reaches the host "
        "device, writeback: the host page cache serves it (disk figures flagged implausible)",
    ),
    "disk_gb": (4, None, "root disk size in GiB (free space for disk tests)"),
    "vcpu_pin": (None, None, "host CPUs for the vCPU threads (list); a cell's cpus override"),
    "emulator_pin": (
        None,
        None,
        "host CPUs for QEMU's other threads: main loop, NIC and disk back ends (list), as "
        "libvirt's emulatorpin",
    ),
    "cpu_weight": (None, None, "cgroup CPU weight of the QEMU process (cpu.shares scale)"),
    "cpu_quota_us": (None, None, "CFS quota of the QEMU process per period (µs)"),
    "cpu_period_us": (None, None, "CFS period (µs), default 100000"),
    "boot_timeout": (120, None, "seconds to wait for the guest agent"),
}


@dataclass(frozen=True)
class VmOptions(PlatformOptions):
    accel: str
    vcpus: int
    memory_mb: int
    net: str
    network: str
    disk: str
    disk_cache: str
    disk_gb: int
    vcpu_pin: list[int] | None  # host CPUs for the vCPU threads; None: they float
    emulator_pin: list[int] | None  # host CPUs for QEMU's other threads; None: they float
    cpu_weight: int | None  # cgroup limits of the QEMU process; None: not set
    cpu_quota_us: int | None
    cpu_period_us: int | None
    boot_timeout: int  # seconds

    schema = SCHEMA

    @classmethod
    def read(cls, r: OptionReader) -> dict[str, Any]:
        # checked against this host: where the spec is parsed is where its platforms run
        cpus = sorted(os.sched_getaffinity(0))
        mem_mb = hostinfo.mem_total_bytes() // (1 << 20)
        n = len(cpus)
        fields = {k: r.values[k] for k in ("accel", "net", "network", "disk", "disk_cache")}
        fields |= {
            "vcpus": _int(r, "vcpus", 1, n, f" (this host has {n} CPUs)"),
            "memory_mb": _int(
                r,
                "memory_mb",
                64,
                max(64, mem_mb * 9 // 10),
                f" MiB (90% of this host's {mem_mb} MiB)",
            ),
            "disk_gb": _int(r, "disk_gb", 1, 1024, " GiB"),
            "boot_timeout": _int(r, "boot_timeout", 5, 3600, " s"),
            **{
                key: r.get(
                    key,
                    lambda pin: parsing.cpu_list(_a_list(pin), cpus),
                    f"a non-empty list of host CPUs from {cpus}",
                    BAD,
                )
                for key in ("vcpu_pin", "emulator_pin")
            },
            "cpu_weight": _int(r, "cpu_weight", 2, 262144, " (cpu.shares scale)"),
            "cpu_quota_us": _int(r, "cpu_quota_us", 1000, 10_000_000, " µs"),
            "cpu_period_us": _int(r, "cpu_period_us", 1000, 1_000_000, " µs"),
        }
        return fields


def _int(r: OptionReader, key: str, lo: int, hi: int, unit: str) -> Any:
    return r.get(key, lambda v: parsing.integer(v, lo, hi), f"an integer {lo}..{hi}{unit}", BAD)


def _a_list(pin: Any) -> list:
    if not isinstance(pin, list):
        raise ParseError(pin, "is not a list", "")
    return pin


def problems(where: str, opts: dict[str, Any]) -> list[OptionError]:
    """Every bad option (defaults filled in for what `opts` leaves out)."""
    return VmOptions.problems(opts, where)


def validate(where: str, opts: dict[str, Any]) -> VmOptions:
    """Raise PlatformError naming the option, its value and the allowed range on this host."""
    return VmOptions.parse(opts, where)
