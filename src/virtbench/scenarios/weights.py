"""CPU weights for co-located environments (seed 003 §6's Dom0:Dom1:Dom2 ratios on Linux).

An environment with its own cgroup (container, VM in a cgroup) gets the weight written to
that cgroup and restored afterwards (the runner reuses the target for the next cell). An
environment without one (native) gets a `vb-` cgroup its processes are moved into as they
appear (polled every 50 ms: a process runs unweighted for at most that long).

The "driver domain" weight goes to the host-side back-end work that can be grouped: the
non-vCPU threads of a VM's process (QEMU main loop and I/O threads doing virtio/e1000 and tap
work), split into their own cpu cgroup on cgroup v1. Softirq work (bridge, veth, NAT) runs
in whatever task the CPU was executing or in ksoftirqd and cannot be weighted per
environment; the returned notes say what was and was not weighted (docs/colocation.md).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..cgroups import Cgroup, Layout, shares_to_weight
from ..metrics.schedstat import descendants, other_threads
from ..platforms.base import NAME_PREFIX, Platform

POLL_S = 0.05


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _whose(platform: Platform) -> str:
    """Whose cgroup an environment's weight lands on, for the cell's labels."""
    extra = platform.accounting().extra
    if extra.get("stacked_on"):
        return f"the QEMU process's cgroup of its VM '{extra['stacked_on']}'"
    if extra.get("qemu_pid"):
        return "the QEMU process's cgroup"
    return "its own cgroup"


def _own_cgroup_knob(platform: Platform) -> tuple[Path, str] | None:
    """The weight file of the environment's own cgroup and the value format, if it has one."""
    cg = platform.accounting().cgroups
    if "cpu" in cg and Path(cg["cpu"], "cpu.shares").exists():
        return Path(cg["cpu"], "cpu.shares"), "shares"
    if "unified" in cg and Path(cg["unified"], "cpu.weight").exists():
        return Path(cg["unified"], "cpu.weight"), "weight"
    return None


@contextlib.contextmanager
def _set_knob(path: Path, value: str):
    old = path.read_text().strip()
    _write(path, value)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # the environment may already be gone
            _write(path, old)


def _root_procs(layout: Layout) -> list[Path]:
    """Where to put processes back: the root of each hierarchy our group lives in."""
    return [p.parent / "cgroup.procs" for p in layout.parent_dirs().values()]


@contextlib.contextmanager
def _adopted(platform: Platform, shares: int):
    """A vb- cgroup with `shares` that the environment's processes are moved into."""
    cg = Cgroup.create(f"{NAME_PREFIX}{secrets.token_hex(3)}-w", cpu_weight=shares)
    stop = threading.Event()
    moved: set[int] = set()

    def adopt() -> None:
        while not stop.is_set():
            with contextlib.suppress(Exception):  # processes come and go
                for pid in descendants(platform.accounting().pids):
                    if pid not in moved:
                        cg.add_pid(pid)
                        moved.add(pid)
            stop.wait(POLL_S)

    th = threading.Thread(target=adopt, daemon=True, name="vb-weight-adopter")
    th.start()
    try:
        yield cg
    finally:
        stop.set()
        th.join(timeout=2)
        # give survivors (a server the platform still owns) back instead of killing them
        for pid in cg.pids():
            for procs in _root_procs(cg.layout):
                with contextlib.suppress(OSError):
                    _write(procs, str(pid))
        cg.destroy()


@contextlib.contextmanager
def _backend_group(platforms: list[tuple[Platform, str]], shares: int, notes: dict[str, Any]):
    """Non-vCPU threads of VM processes in their own cpu cgroup (cgroup v1 only)."""
    layout = Layout.detect()
    items: list[tuple[int, Path]] = []  # (tid, original cpu cgroup dir)
    home: dict[int, Path] = {}  # QEMU pid -> its own cpu cgroup dir
    roles: list[str] = []
    seen: set[int] = set()  # container@vm shares its VM's QEMU process
    for p, role in platforms:
        acct = p.accounting()
        if not acct.threads or "cpu" not in acct.cgroups:
            continue
        roles.append(role)
        home.update(dict.fromkeys(acct.pids, Path(acct.cgroups["cpu"])))
        for tid in other_threads(acct):
            if tid not in seen:
                seen.add(tid)
                items.append((tid, Path(acct.cgroups["cpu"])))
    if not items or layout.version != "v1":
        notes["host_weight_applied_to"] = (
            "nothing: no separable back-end threads (native/container I/O runs in softirq "
            "context, charged to the tasks it serves)"
            if not items
            else "nothing: cgroup v2 cannot split one process's threads across domain groups"
        )
        yield
        return
    cg = Cgroup.create(f"{NAME_PREFIX}{secrets.token_hex(3)}-be", cpu_weight=shares)
    tasks = Path(cg.paths()["cpu"], "tasks")
    moved = 0
    for tid, _orig in items:
        with contextlib.suppress(OSError):  # a thread may exit in between
            _write(tasks, str(tid))
            moved += 1
    notes["host_weight_applied_to"] = (
        f"cpu.shares={shares} on {tasks.parent}: {moved} QEMU non-vCPU threads (main loop, "
        f"I/O threads: the virtio/e1000 back ends and tap I/O) of {', '.join(roles)}; their "
        "vCPU threads keep the environments' own weights; softirq work (bridge, NAT) is not "
        "weighted"
    )
    try:
        yield
    finally:
        _send_home(tasks, home, layout)
        cg.destroy()


def _send_home(tasks: Path, home: dict[int, Path], layout: Layout) -> None:
    """Move every thread in the back-end group back to its QEMU process's cgroup: also the
    worker threads QEMU started meanwhile (they inherit the group of the thread that made
    them). The group must be empty before it is destroyed: destroying kills what is inside."""
    root = layout.parent_dirs()["cpu"].parent  # the hierarchy's root: a last resort
    for _ in range(50):
        try:
            tids = [int(x) for x in tasks.read_text().split()]
        except (OSError, ValueError):
            return
        if not tids:
            return
        for tid in tids:
            with contextlib.suppress(OSError):  # exited meanwhile
                _write(home.get(_tgid(tid), root) / "tasks", str(tid))
        time.sleep(0.01)


def _tgid(tid: int) -> int:
    try:
        status = Path(f"/proc/{tid}/status").read_text()
    except OSError:
        return tid
    i = status.find("\nTgid:")
    return int(status[i + 6 :].split(None, 1)[0]) if i >= 0 else tid


def apply(
    items: list[tuple[Platform, int | None, str]], host_weight: int | None, stack: ExitStack
) -> dict[str, Any]:
    """Apply weights (cpu.shares scale) for the cell; undo them when `stack` closes."""
    notes: dict[str, Any] = {}
    weighted = {}
    for platform, shares, role in items:
        if shares is None:
            continue
        knob = _own_cgroup_knob(platform)
        if knob is not None:
            path, kind = knob
            value = str(shares if kind == "shares" else shares_to_weight(shares))
            stack.enter_context(_set_knob(path, value))
            weighted[role] = f"{path.name}={value} on {_whose(platform)} {path.parent}"
        else:
            stack.enter_context(_adopted(platform, shares))
            weighted[role] = f"cpu.shares={shares} on a vb- cgroup its processes join"
    if weighted:
        notes["weights_applied"] = weighted
    if host_weight is not None:
        stack.enter_context(_backend_group([(p, r) for p, _w, r in items], host_weight, notes))
    return notes
