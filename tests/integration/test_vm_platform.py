"""The vm platform for real: TCG guests on this host's QEMU, controlled by the guest agent.

Each boot takes ~5-15 s under TCG on a busy 2-core machine; these tests boot four guests.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from virtbench import cleanup, hostnet, tools
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.vm import accel, cleaner, image, initramfs, kernel, nicstall, paths
from virtbench.platforms.vm.platform import VmPlatform

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("qemu-system-x86_64") is None, reason="QEMU not installed"),
]


def vm(name: str, **opts) -> VmPlatform:
    return VmPlatform(PlatformSpec(name, "vm", {"accel": "tcg"} | opts), name)


def assert_gone(instance: str) -> None:
    assert instance not in cleaner.leftover_qemus().values()
    assert not (paths.run_dir() / instance).exists()
    assert not any(p.name.startswith(instance) for p in Path("/sys/class/net").iterdir())
    assert not cleanup.in_use(instance)


def test_probe_reaches_init_under_tcg():
    """Positive control for the KVM probe: the same probe guest under TCG exits via init."""
    k = kernel.find_kernel()
    argv = accel.probe_argv(
        "vb-probetest", kernel.vmlinux(k, paths.image_dir()), image.probe_initrd(), accel="tcg"
    )
    r = subprocess.run(argv, capture_output=True, timeout=120)
    assert r.returncode == initramfs.PROBE_EXIT_CODE, r.stderr


def test_auto_records_the_accelerator_used():
    usable, why = accel.probe_kvm()
    used, reason = accel.resolve("auto")
    assert used == ("kvm" if usable else "tcg") and why in reason


def test_exec_spawn_endpoint_disk_and_teardown():
    p = vm("vb-vmt001", network="bridge", disk="virtio-blk")
    with p:
        labels = p.labels()
        assert labels["accel_used"] == "tcg" and labels["network_used"] == "bridge"
        assert 0 < labels["boot_s"] < 120
        r = p.exec(["sh", "-c", "echo out; echo err >&2; exit 7"])
        assert (r.returncode, r.stdout, r.stderr) == (7, "out\n", "err\n")
        r = p.exec(["sh", "-c", "sleep 30 & sleep 30"], timeout=1)
        assert r.timed_out and r.elapsed_s < 15
        assert p.exec(["sh", "-c", "echo $GREETING"], env={"GREETING": "hi"}).stdout == "hi\n"
        # O_DIRECT on the guest's virtio-blk root, in the workdir the disk suite uses
        r = p.exec(["dd", "if=/dev/zero", f"of={p.workdir}/f", "bs=1M", "count=8", "oflag=direct"])
        assert r.ok, r.stderr
        acct = p.accounting()
        assert acct.pids and acct.threads and acct.net_ifaces == ["vb-vmt001-t"]
        assert acct.cgroups and acct.extra["vcpu_threads"] == acct.threads
        # a server in the guest, reached from the host at endpoint()
        assert p.exec(["sh", "-c", f"hostname > {p.workdir}/name"]).ok
        server = p.spawn(["/run/vb/busybox", "httpd", "-f", "-p", "8080", "-h", p.workdir])
        host, port = p.endpoint(8080)
        assert host.startswith("10.213.0.")
        body = _http_get(host, port, "/name")
        assert body.strip() == "vb-vmt001"
        assert server.poll() is None
        # the stalled-NIC path on a healthy guest: rings readable, nothing stalled, nothing
        # done; a kick from inside is harmless and the server stays reachable
        rings = nicstall.rings(p.machine.qmp)
        assert [r.queue for r in rings] == [0, 1] and all(r.avail is not None for r in rings)
        facts, acted = p.recover_network()
        assert not acted and "virtio-net rx: guest avail" in facts and "tx_packets=" in facts
        done, what = nicstall.kick_tx(p.machine.agent)
        assert done and what.startswith("kicked queue 1 of "), what
        assert _http_get(host, port, "/name").strip() == "vb-vmt001"
        stopped = server.stop()
        assert stopped.returncode is not None and server.poll() is not None
    assert_gone("vb-vmt001")


def _http_get(host: str, port: int, path: str, tries: int = 50) -> str:
    for _ in range(tries):
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
            return data.split(b"\r\n\r\n", 1)[1].decode()
        except OSError:
            time.sleep(0.2)  # server still starting
    raise AssertionError(f"no answer from {host}:{port}")


def test_user_networking_emulated_devices_and_crash_cleanup():
    """e1000 + IDE with user-mode networking; then the owner 'dies' and cleanup removes all."""
    p = vm("vb-vmt002", network="user", net="e1000", disk="ide")
    p.provision()
    try:
        r = p.exec(["sh", "-c", "cat /sys/class/net/eth0/device/uevent; grep ' / ' /proc/mounts"])
        assert "DRIVER=e1000" in r.stdout and r.stdout.rstrip().endswith("0 0")
        assert "/dev/sda / ext4" in r.stdout
        assert p.exec(["sh", "-c", f"hostname > {p.workdir}/name"]).ok
        p.spawn(["/run/vb/busybox", "httpd", "-f", "-p", "8081", "-h", p.workdir])
        host, port = p.endpoint(8081)
        assert host == "127.0.0.1"
        assert _http_get(host, port, "/name").strip() == "vb-vmt002"
        # as if the virtbench process had been killed: its claim names a process that is gone
        # (cleanup removes only what a dead owner's trusted record names)
        (cleanup.OWNERS_DIR / "vb-vmt002").write_text("999999999 0\n")
        removed = cleaner.clean()
        assert any("qemu process" in line for line in removed)
        assert_gone("vb-vmt002")
    finally:
        p.teardown()  # idempotent after cleanup


def test_cpu_weights_share_one_cpu_about_4_to_1():
    """Two CPU-bound VMs pinned to one host CPU, QEMU cgroups weighted 1024 vs 256."""
    cpu = [max(0, len(__import__("os").sched_getaffinity(0)) - 1)]
    heavy = vm("vb-vmt003", network="user", cpu_weight=1024, vcpu_pin=cpu)
    light = vm("vb-vmt004", network="user", cpu_weight=256, vcpu_pin=cpu)
    with heavy, light:
        procs = []
        before = [heavy.cgroup.cpu_usage_s(), light.cgroup.cpu_usage_s()]
        for p in (heavy, light):
            procs.append(p.spawn(["stress-ng", "--cpu", "1", "--timeout", "12"]))
        time.sleep(12)
        after = [heavy.cgroup.cpu_usage_s(), light.cgroup.cpu_usage_s()]
        for proc in procs:
            proc.stop()
    used = [a - b for a, b in zip(after, before, strict=True)]
    ratio = used[0] / used[1]
    print(f"cpu seconds heavy {used[0]:.2f} light {used[1]:.2f} ratio {ratio:.2f}")
    assert 2.5 < ratio < 6.0  # generous band around 4:1 on a shared, noisy host
    assert_gone("vb-vmt003")
    assert_gone("vb-vmt004")


def test_no_bridge_left_when_idle():
    # other virtbench runs may hold the bridge; only check our leases are gone
    assert not any(owner.startswith("vb-vmt") for owner in hostnet._leases().values())
