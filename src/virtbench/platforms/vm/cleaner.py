"""`virtbench cleanup` for VMs: QEMU processes named vb-*, their run directories (overlays,
sockets, logs), taps, address leases and NAT rules — unless a live virtbench process owns them."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

from ... import cleanup, hostnet
from ...errors import PlatformError
from ..base import NAME_PREFIX
from . import paths, qemu


def leftover_qemus() -> dict[int, str]:
    """pid -> -name of every running QEMU whose name carries virtbench's prefix."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            name = qemu.qemu_name(int(entry.name))
            if name and name.startswith(NAME_PREFIX):
                found[int(entry.name)] = name
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            return
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it happens to be our child
        time.sleep(0.02)


@cleanup.register("vm")
def clean() -> list[str]:
    removed: list[str] = []
    owners: set[str] = set()
    for pid, name in sorted(leftover_qemus().items()):
        state = cleanup.owner(name)
        if state == cleanup.NO_RECORD:  # a QEMU someone else named vb-...: not ours to kill
            removed.append(cleanup.left_alone(f"qemu process {pid} ({name})"))
        if state != cleanup.DEAD:
            continue
        cmd = cleanup.command_of(pid) or name
        _kill(pid)
        owners.add(name)
        removed.append(f"qemu process {pid} ({name})")
        removed.extend(cleanup.ended({pid: cmd}, f"vm {name}"))
    root = paths.run_dir()
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.name.startswith(NAME_PREFIX) and not cleanup.in_use(d.name):
                shutil.rmtree(d, ignore_errors=True)
                owners.add(d.name)
                removed.append(f"vm run directory {d} (overlay, sockets)")
    for owner in sorted(owners):
        with contextlib.suppress(PlatformError, OSError):
            hostnet.unpublish(owner)
            hostnet.detach(owner)  # tap and address lease, if the network cleaner ran first
    return removed
