"""Which accelerator a VM really gets: KVM only when a guest kernel demonstrably boots with it.

`/dev/kvm` opening is not enough: on PVM hosts (kvm_pvm) KVM_CREATE_VM works but stock guests
stall in early boot or QEMU aborts setting MSRs. The probe boots the guest kernel with a tiny
initramfs whose init writes to QEMU's isa-debug-exit port; only that exit code proves init ran.
The verdict is cached per host boot, QEMU version and guest kernel, so runs do not repeat it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

from ... import cleanup, doctor_registry, hostinfo, safefs, tools
from ...doctor_registry import Check
from ...errors import PlatformError, VirtbenchError
from ..base import NAME_PREFIX
from . import image, initramfs, kernel, paths

PROBE_TIMEOUT_S = 15.0
CACHE = Path("/run/virtbench/kvm-probe.json")


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _cache_key(guest: kernel.Kernel) -> str:
    return "|".join(
        [
            _boot_id(),
            str(tools.version("qemu-system-x86_64")),
            guest.identity(),
            hostinfo.kvm_flavour(),
        ]
    )


def _cached(key: str) -> tuple[bool, str] | None:
    try:
        entry = json.loads(safefs.read_state(CACHE) or "{}").get(key)
    except (ValueError, AttributeError):
        return None
    return (bool(entry[0]), str(entry[1])) if entry else None


def _store(key: str, verdict: tuple[bool, str]) -> None:
    with contextlib.suppress(OSError):  # UnsafePath is one: a cache, not worth failing for
        safefs.write_state(CACHE, json.dumps({key: list(verdict)}))


def probe_argv(name: str, vmlinux: Path, initrd: Path, accel: str = "kvm") -> list[str]:
    """`accel` is kvm for the probe itself; tests use tcg as the positive control."""
    return [
        "qemu-system-x86_64",
        "-name", name,
        "-machine", f"q35,accel={accel}",
        "-cpu", "host" if accel == "kvm" else "max",  # the model real guests get
        "-smp", "1", "-m", "256",
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-kernel", str(vmlinux), "-initrd", str(initrd),
        "-append", "console=ttyS0 quiet panic=0",  # panic=0: a panic hangs, never "exits ok"
        "-serial", "null",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
    ]  # fmt: skip


def _run_probe(timeout: float) -> tuple[bool, str]:
    flavour = hostinfo.kvm_flavour()
    if flavour == "none":
        return False, "/dev/kvm does not exist"
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
        os.close(fd)
    except OSError as exc:
        return False, f"cannot open /dev/kvm: {exc.strerror}"
    if tools.which("qemu-system-x86_64") is None:
        return False, "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
    guest = kernel.find_kernel()
    vmlinux = kernel.vmlinux(guest, paths.image_dir())
    initrd = image.probe_initrd()
    name = f"{NAME_PREFIX}kvmprobe{os.getpid()}"
    cleanup.claim(name)
    start = time.monotonic()
    try:
        r = subprocess.run(
            probe_argv(name, vmlinux, initrd),
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return False, f"a {flavour} guest did not reach init within {timeout:.0f} s (stalled)"
    finally:
        cleanup.release(name)
    took = time.monotonic() - start
    if r.returncode == initramfs.PROBE_EXIT_CODE:
        return True, f"a {flavour} guest booted to init in {took:.1f} s"
    err = " ".join(r.stderr.strip().splitlines()[-2:]) or f"exit status {r.returncode}"
    return False, f"QEMU with KVM ({flavour}) failed after {took:.1f} s: {err}"


def probe_kvm(timeout: float = PROBE_TIMEOUT_S, use_cache: bool = True) -> tuple[bool, str]:
    """(usable, why): whether a guest kernel boots to init under KVM on this host."""
    try:
        key = _cache_key(kernel.find_kernel())
    except VirtbenchError as exc:
        return False, str(exc)
    if use_cache and (hit := _cached(key)) is not None:
        return hit
    try:
        verdict = _run_probe(timeout)
    except VirtbenchError as exc:
        return False, str(exc)
    _store(key, verdict)
    return verdict


def resolve(requested: str) -> tuple[str, str]:
    """(accel to use, why) for `accel = requested` (auto | kvm | tcg)."""
    if requested == "tcg":
        return "tcg", "requested: TCG binary translation (full virtualization, no hardware assist)"
    usable, why = probe_kvm()
    if requested == "kvm":
        if not usable:
            raise PlatformError(
                f'accel = "kvm" requested but KVM is not usable on this host: {why}; '
                'use accel = "auto" to fall back to TCG, or accel = "tcg"'
            )
        return "kvm", why
    if usable:
        return "kvm", f"auto: {why}"
    return "tcg", f"auto: KVM not usable ({why}); using TCG binary translation"


@doctor_registry.register(50)
def doctor_check() -> Check:
    """Whether VMs get hardware assist here: /dev/kvm present, and a guest boots with it."""
    flavour = hostinfo.kvm_flavour()
    if flavour == "none":
        return Check(
            "kvm",
            "warn",
            "/dev/kvm absent: VMs will use TCG (binary translation)",
            "enable virtualization in firmware or nested virt; TCG still works",
        )
    usable, why = probe_kvm()
    if usable:
        return Check("kvm", "ok", f"KVM ({flavour}) boots a guest: VMs use hardware assist")
    return Check("kvm", "warn", f"KVM ({flavour}) present but not usable: {why}; VMs use TCG")
