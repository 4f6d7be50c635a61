"""Re-capture the real QEMU/agent outputs the VM unit tests parse (run as root on a host with
QEMU and the VM image: python tests/data/vm/capture.py). Boots one TCG guest."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.vm import kernel, modules, qemu
from virtbench.platforms.vm.platform import VmPlatform

HERE = Path(__file__).parent


def raw_exchange(path: Path, payload: bytes, wait: float = 2.0) -> bytes:
    """Send bytes on a fresh connection and return everything that comes back within `wait`."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(path))
    s.sendall(payload)
    s.settimeout(0.3)
    data = b""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def main() -> None:
    spec = PlatformSpec("vm", "vm", {"accel": "tcg", "vcpus": 2, "network": "user"})
    with VmPlatform(spec, "vb-capture") as vm:
        m = vm.machine
        (HERE / "qmp-query-cpus-fast.json").write_text(
            json.dumps(m.qmp.command("query-cpus-fast"), indent=1) + "\n"
        )
        threads = m.threads()
        (HERE / "qemu-thread-names.json").write_text(
            json.dumps(sorted(threads.values()), indent=1) + "\n"
        )
        m.agent.close()  # the raw exchanges below need the channel to themselves
        sync = b'\xff{"execute": "guest-sync-delimited", "arguments": {"id": 4242}}\n'
        (HERE / "qga-sync-delimited.bin").write_bytes(raw_exchange(m.cfg.agent_socket, sync))
        pid = m.agent.exec_start(["/bin/sh", "-c", "echo out; echo err >&2; sleep 1; exit 3"])
        running = m.agent.command("guest-exec-status", pid=pid)
        time.sleep(2)
        done = m.agent.command("guest-exec-status", pid=pid)
        pid = m.agent.exec_start(["/run/vb/busybox", "setsid", "sleep", "30"])
        m.agent.exec_start(["/run/vb/busybox", "kill", "-KILL", "--", f"-{pid}"])
        time.sleep(1)
        killed = m.agent.command("guest-exec-status", pid=pid)
        (HERE / "qga-exec-status.json").write_text(
            json.dumps({"running": running, "exited": done, "killed": killed}, indent=1) + "\n"
        )
        (HERE / "qemu-argv.json").write_text(json.dumps(qemu.argv(m.cfg), indent=1) + "\n")
    capture_modules()


def capture_modules() -> None:
    """The guest modules' lines of the real modules.dep (no guest needed: --modules-only)."""
    k = kernel.find_kernel()
    text = (k.modules / "modules.dep").read_text()
    closure = set(modules.resolve(k.modules, modules.GUEST_MODULES))
    lines = [ln for ln in text.splitlines() if modules._modname(ln.split(":")[0]) in closure]
    (HERE / "modules.dep").write_text("\n".join(lines) + "\n")
    builtin = (k.modules / "modules.builtin").read_text().splitlines()
    (HERE / "modules.builtin").write_text(
        "\n".join(b for b in builtin if "crc32c" in b or "virtio" in b or "ata" in b) + "\n"
    )


if __name__ == "__main__":
    import sys

    capture_modules() if "--modules-only" in sys.argv else main()
