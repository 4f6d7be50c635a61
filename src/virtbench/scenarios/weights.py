"""CPU weights for co-located environments (seed 003 §6's Dom0:Dom1:Dom2 ratios on Linux).

Each environment's weight goes through its platform's CpuWeight capability (its own cgroup, or
a `vb-` cgroup its processes join: platforms/cpu_weight.py), undone when the cell ends.

The "driver domain" weight goes to the host-side back-end work that can be grouped: the
threads a platform names as its BackendThreads (a VM's QEMU main loop and I/O threads doing
virtio/e1000 and tap work), split into their own cpu cgroup on cgroup v1: inside the cell's
shared CPU budget when there is one, so the driver domain and the guests divide one budget by
their weights (seed 003's Dom0:Dom1:Dom2 on one CPU pool), never escaping it. Softirq work
(bridge, veth, NAT) runs in whatever task the CPU was executing or in ksoftirqd and cannot be
weighted per environment; the returned notes say what was and was not weighted
(docs/colocation.md).
"""

from __future__ import annotations

import contextlib
import secrets
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..cgroups import Cgroup, CpuBudget, Layout
from ..naming import NAME_PREFIX
from ..platforms.base import Platform
from ..platforms.capabilities import BackendThreads, CpuWeight, require
from ..platforms.cpu_weight import lifted_quota


def _write(path: Path, value: str) -> None:
    path.write_text(value)


@contextlib.contextmanager
def _backend_group(
    platforms: list[tuple[Platform, str]],
    shares: int,
    notes: dict[str, Any],
    budget: CpuBudget | None = None,
):
    """Back-end threads of the environments in their own cpu cgroup (cgroup v1 only), a child
    of `budget` when the environments share one."""
    layout = Layout.detect()
    items: list[tuple[int, Path]] = []  # (tid, original cpu cgroup dir)
    home: dict[int, Path] = {}  # owning process (QEMU) -> its own cpu cgroup dir
    roles: list[str] = []
    seen: set[int] = set()  # container@vm shares its VM's QEMU process
    for p, role in platforms:
        group = p.backend_threads() if isinstance(p, BackendThreads) else None
        if group is None or group.cpu_cgroup is None:
            continue
        roles.append(role)
        home.update(dict.fromkeys(group.pids, Path(group.cpu_cgroup)))
        for tid in group.tids:
            if tid not in seen:
                seen.add(tid)
                items.append((tid, Path(group.cpu_cgroup)))
    if not items or layout.version != "v1":
        notes["host_weight_applied_to"] = (
            "nothing: no separable back-end threads (native/container I/O runs in softirq "
            "context, charged to the tasks it serves)"
            if not items
            else "nothing: cgroup v2 cannot split one process's threads across domain groups"
        )
        yield
        return
    name = f"{NAME_PREFIX}{secrets.token_hex(3)}-be"
    cg = Cgroup.create(name if budget is None else budget.child(name), cpu_weight=shares)
    inside = "" if budget is None else f" inside the shared budget {budget.facts().text()}"
    tasks = Path(cg.paths()["cpu"], "tasks")
    moved = 0
    for tid, _orig in items:
        with contextlib.suppress(OSError):  # a thread may exit in between
            _write(tasks, str(tid))
            moved += 1
    notes["host_weight_applied_to"] = (
        f"cpu.shares={shares} on {tasks.parent}{inside}: {moved} QEMU non-vCPU threads (main loop, "
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
    items: list[tuple[Platform, int | None, str]],
    host_weight: int | None,
    stack: ExitStack,
    lift_quotas: bool = False,
    budget: CpuBudget | None = None,
) -> dict[str, Any]:
    """Apply weights (cpu.shares scale) for the cell; undo them when `stack` closes.

    `lift_quotas` (a weights cell on one shared CPU) lifts each weighted environment's CFS
    quota meanwhile, so the shared CPU and not a per-environment cap is what they divide.
    `budget`: the cell's shared CPU budget, which the back-end group joins."""
    notes: dict[str, Any] = {}
    weighted, lifted = {}, {}
    for platform, shares, role in items:
        if shares is None:
            continue
        weightable = require(platform, CpuWeight, f"the weights scenario ({role})")
        weighted[role] = stack.enter_context(weightable.cpu_weight(shares))
        if lift_quotas and (what := stack.enter_context(lifted_quota(platform))):
            lifted[role] = what
    if weighted:
        notes["weights_applied"] = weighted
    if lifted:
        notes["quota_lifted"] = lifted
    if host_weight is not None:
        backends = [(p, r) for p, _w, r in items]
        stack.enter_context(_backend_group(backends, host_weight, notes, budget))
    return notes
