"""The QEMU command line and option checks of the vm platform."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from virtbench.errors import PlatformError
from virtbench.platforms.vm import options, qemu

DATA = Path(__file__).parent.parent / "data" / "vm"


def cfg(**kw) -> qemu.VmConfig:
    base = dict(
        name="vb-abc123",
        run_dir=Path("/run/x"),
        vmlinux=Path("/k"),
        initrd=Path("/i"),
        overlay=Path("/o.qcow2"),
        accel="tcg",
        modules=["virtio", "virtio_blk"],
    )
    return qemu.VmConfig(**(base | kw))


def _after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_argv_names_the_vm_for_cleanup_and_thread_names():
    a = qemu.argv(cfg())
    assert _after(a, "-name") == ["vb-abc123,debug-threads=on"]
    assert "q35,accel=tcg" in _after(a, "-machine")
    assert _after(a, "-cpu") == ["max"]


def test_kvm_uses_the_host_cpu_model():
    assert _after(qemu.argv(cfg(accel="kvm")), "-cpu") == ["host"]


def test_unresolved_accel_is_refused():
    with pytest.raises(PlatformError):
        qemu.argv(cfg(accel="auto"))


@pytest.mark.parametrize(
    "disk,device,root",
    [
        ("virtio-blk", "virtio-blk-pci,drive=root", "/dev/vda"),
        ("sata", "ide-hd,drive=root,bus=ide.0", "/dev/sda"),
        ("ide", "ide-hd,drive=root,bus=pata0.0", "/dev/sda"),
    ],
)
def test_disk_models(disk, device, root):
    c = cfg(disk=disk)
    assert device in _after(qemu.argv(c), "-device")
    assert f"vb.root={root}" in c.cmdline()


def test_nic_models_and_networking():
    tap = qemu.argv(cfg(net="e1000", tap="vb-abc123-t", guest_ip="10.213.0.2/24"))
    assert any(d.startswith("e1000,netdev=net0,mac=52:54:00:") for d in _after(tap, "-device"))
    assert _after(tap, "-netdev") == ["tap,id=net0,ifname=vb-abc123-t,script=no,downscript=no"]
    user = qemu.argv(cfg(hostfwd=[(2222, 22)]))
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in _after(user, "-netdev")[0]
    assert not _after(qemu.argv(cfg(net="none")), "-netdev")


def test_cmdline_carries_address_modules_and_name():
    line = cfg(guest_ip="10.213.0.7/24", gateway="10.213.0.1").cmdline()
    assert "vb.ip=10.213.0.7/24" in line and "vb.gw=10.213.0.1" in line
    assert "vb.modules=virtio,virtio_blk" in line and "vb.name=vb-abc123" in line
    assert len(line) < 2048  # x86 kernel command line limit


def test_guest_modules_follow_the_devices():
    assert "e1000" in qemu.guest_modules("e1000", "ide")
    assert "ata_piix" in qemu.guest_modules("e1000", "ide")
    assert "virtio_net" not in qemu.guest_modules("e1000", "ide")
    assert "ahci" in qemu.guest_modules("none", "sata")


def test_mac_is_stable_and_local():
    assert cfg().mac() == cfg().mac()
    assert cfg().mac().startswith("52:54:00:")
    assert cfg(name="vb-other1").mac() != cfg().mac()


def test_captured_argv_matches_the_builder_shape():
    argv = json.loads((DATA / "qemu-argv.json").read_text())
    assert argv[0] == "qemu-system-x86_64"
    assert any(a.startswith("vb-") and "debug-threads=on" in a for a in argv)


def test_qemu_name_from_cmdline():
    cmd = b"\0".join([b"/usr/bin/qemu-system-x86_64", b"-name", b"vb-abc123,debug-threads=on", b""])
    assert qemu.name_from_cmdline(cmd) == "vb-abc123"
    assert qemu.name_from_cmdline(b"sleep\0-name\0vb-x\0") is None  # not QEMU
    assert qemu.name_from_cmdline(b"qemu-system-x86_64\0-m\0512\0") is None


def opts(**kw):
    return {k: v[0] for k, v in options.SCHEMA.items()} | kw


def test_options_defaults_are_valid():
    options.validate("vm", opts())


@pytest.mark.parametrize(
    "key,value,needle",
    [
        ("vcpus", 4096, "vcpus = 4096"),
        ("vcpus", 0, "vcpus = 0"),
        ("memory_mb", 10**9, "memory_mb"),
        ("vcpu_pin", [9999], "vcpu_pin"),
        ("emulator_pin", [9999], "emulator_pin"),
        ("emulator_pin", 1, "emulator_pin"),
        ("cpu_weight", 1, "cpu_weight"),
        ("disk_gb", "big", "disk_gb"),
    ],
)
def test_bad_options_name_key_value_and_range(key, value, needle):
    with pytest.raises(PlatformError, match="allowed") as exc:
        options.validate("vm1", opts(**{key: value}))
    assert needle in str(exc.value) and "vm1" in str(exc.value)


@pytest.mark.parametrize("mode", ["none", "directsync", "writeback"])
def test_disk_cache_mode_reaches_the_drive(mode):
    (drive,) = _after(qemu.argv(cfg(disk_cache=mode)), "-drive")
    assert f"cache={mode}" in drive.split(",")


def test_disk_cache_defaults_to_none():
    assert options.validate("vm", {}).disk_cache == "none"


def test_emulator_pin_moves_every_thread_but_the_vcpus(tmp_path):
    """Machine.pin_emulator on a real two-thread process standing in for QEMU: its main
    thread and a thread it makes later go to the CPUs; the one named as a vCPU stays put."""
    import subprocess
    import sys
    import time

    from virtbench.platforms.vm.machine import Machine

    allowed = sorted(os.sched_getaffinity(0))
    code = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "input()\n"  # the 'later' thread, made after the pinning
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)
    try:
        tasks = Path(f"/proc/{proc.pid}/task")
        while len(list(tasks.iterdir())) < 2:
            time.sleep(0.01)
        main, vcpu = sorted(int(t.name) for t in tasks.iterdir())
        machine = Machine.__new__(Machine)
        machine.proc, machine.vcpu_threads = proc, [vcpu]
        machine.pin_emulator([allowed[0]])
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        while len(list(tasks.iterdir())) < 3:
            time.sleep(0.01)
        pins = {int(t.name): os.sched_getaffinity(int(t.name)) for t in tasks.iterdir()}
        assert pins.pop(vcpu) == set(allowed)  # a vCPU is vcpu_pin's, not moved
        assert list(pins.values()) == [{allowed[0]}] * 2  # main and the later thread
        machine.pin_emulator(None)  # None: left as they are
        assert os.sched_getaffinity(main) == {allowed[0]}
    finally:
        proc.kill()
        proc.wait()
