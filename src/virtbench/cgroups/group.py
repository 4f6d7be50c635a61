"""Control groups: create one under the `virtbench` parent, limit, account, destroy.

Weights are given on the v1 `cpu.shares` scale (2..262144, default 1024; the seeds use 256 vs
1024) and converted to v2 `cpu.weight` with the formula crun and systemd use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from .. import cleanup
from ..errors import PlatformError
from ..naming import NAME_PREFIX
from . import rt
from .layout import (
    PARENT,
    V2_CONTROLLERS,
    Layout,
    parse_kv,
    read,
    safe_read,
    walk_files,
    write,
)

SHARES_MIN, SHARES_MAX = 2, 262144


def shares_to_weight(shares: int) -> int:
    """v1 cpu.shares (2..262144) -> v2 cpu.weight (1..10000), as crun/systemd convert it."""
    shares = max(SHARES_MIN, min(SHARES_MAX, shares))
    return 1 + ((shares - 2) * 9999) // 262142


class Cgroup:
    """One control group across all hierarchies virtbench uses."""

    def __init__(self, name: str, layout: Layout) -> None:
        # a nested name "vb-budget/vb-env" is a group inside another of ours (cgroups/budget.py)
        if not all(part.startswith(NAME_PREFIX) for part in name.split("/")):
            raise ValueError(f"cgroup name must start with {NAME_PREFIX!r}: {name!r}")
        self.name = name
        self.layout = layout
        self._dirs = {c: p / name for c, p in layout.parent_dirs().items()}
        self.rt_runtime_us: int | None = None  # RT bandwidth granted (None: not applicable)
        self.rt_period_us: int | None = None

    # --- creation -----------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        name: str,
        *,
        cpu_weight: int | None = None,
        cpu_quota_us: int | None = None,
        cpu_period_us: int | None = None,
        cpuset_cpus: list[int] | None = None,
        memory_limit_bytes: int | None = None,
        pids_max: int | None = None,
        rt_runtime_us: int | str | None = None,
        rt_period_us: int | None = None,
        layout: Layout | None = None,
    ) -> Cgroup:
        """Create `name` under the virtbench parent and apply the given limits.

        `cpu_weight` is on the v1 cpu.shares scale (2..262144); on v2 it is converted.
        `rt_runtime_us` (an int or RT_AUTO) reserves real-time bandwidth where the kernel has
        RT group scheduling (see set_rt_runtime), per `rt_period_us` (default: the host's rt
        period); elsewhere both are ignored.
        """
        cg = cls(name, layout or Layout.detect())
        if "/" not in name:  # the record `cleanup` needs, before the group exists
            cleanup.claim(claim_name(name))
        cg._make_dirs()
        try:
            if rt_runtime_us is not None:
                cg.set_rt_runtime(rt_runtime_us, period_us=rt_period_us)
            if cpu_weight is not None:
                cg.set_cpu_weight(cpu_weight)
            if cpu_quota_us is not None or cpu_period_us is not None:
                cg.set_cpu_quota(cpu_quota_us, cpu_period_us)
            if cpuset_cpus is not None:
                cg.set_cpuset(cpuset_cpus)
            if memory_limit_bytes is not None:
                cg.set_memory_limit(memory_limit_bytes)
            if pids_max is not None:
                cg.set_pids_max(pids_max)
        except BaseException:
            cg.destroy()
            raise
        return cg

    @classmethod
    def attach(cls, name: str, layout: Layout | None = None) -> Cgroup:
        """A handle on an existing group (e.g. one an OCI runtime created under our parent)."""
        return cls(name, layout or Layout.detect())

    def _make_dirs(self) -> None:
        if self.layout.version == "v2":
            root = self.layout.v2_root
            assert root is not None
            _enable_v2_controllers(root)
            (root / PARENT).mkdir(exist_ok=True)
            _enable_v2_controllers(root / PARENT)
            d = root / PARENT
            for part in self.name.split("/")[:-1]:  # a group inside ours delegates as well
                d = d / part
                _require_dir(d)
                _enable_v2_controllers(d)
            self._dirs["unified"].mkdir(exist_ok=True)
            rebalance_parent(self.layout)
            return
        for ctrl, d in self._dirs.items():
            if "/" in self.name:
                _require_dir(d.parent)  # never re-make a removed budget group without its quota
            d.parent.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                # v1 cpuset groups start empty and refuse tasks until cpus/mems are set
                _inherit_cpuset(d.parent)
            d.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                _inherit_cpuset(d)
                # groups an engine makes inside ours (LXC's lxc.pivot, lxc.monitor.*) start
                # with the cpus/mems we have; empty ones refuse tasks with ENOSPC (LXC's first
                # start of a run failed so: "Failed to move monitor ... lxc.pivot")
                with contextlib.suppress(OSError):
                    (d / "cgroup.clone_children").write_text("1")
        rebalance_parent(self.layout)

    # --- limits -------------------------------------------------------------------------
    def _dir(self, ctrl: str) -> Path:
        if self.layout.version == "v2":
            return self._dirs["unified"]
        if ctrl not in self._dirs:
            raise PlatformError(f"cgroup v1 controller '{ctrl}' is not mounted on this host")
        return self._dirs[ctrl]

    def set_cpu_weight(self, shares: int) -> None:
        if not SHARES_MIN <= shares <= SHARES_MAX:
            raise PlatformError(
                f"cpu weight {shares} out of range; allowed: {SHARES_MIN}..{SHARES_MAX} "
                "(cgroup v1 cpu.shares scale, default 1024)"
            )
        if self.layout.version == "v2":
            write(self._dir("cpu") / "cpu.weight", str(shares_to_weight(shares)))
        else:
            write(self._dir("cpu") / "cpu.shares", str(shares))

    def set_cpu_quota(self, quota_us: int | None, period_us: int | None = None) -> None:
        """CFS bandwidth: `quota_us` per `period_us` (None quota = unlimited)."""
        period = period_us or 100_000
        if self.layout.version == "v2":
            quota = "max" if quota_us is None or quota_us < 0 else str(quota_us)
            write(self._dir("cpu") / "cpu.max", f"{quota} {period}")
        else:
            d = self._dir("cpu")
            write(d / "cpu.cfs_period_us", str(period))
            write(d / "cpu.cfs_quota_us", str(-1 if quota_us is None else quota_us))

    def set_cpuset(self, cpus: list[int]) -> None:
        if not cpus:
            raise PlatformError("cpuset must name at least one CPU")
        write(self._dir("cpuset") / _cpuset_file(self.layout, "cpus"), _cpu_list(cpus))

    def set_memory_limit(self, limit_bytes: int) -> None:
        name = "memory.max" if self.layout.version == "v2" else "memory.limit_in_bytes"
        write(self._dir("memory") / name, str(limit_bytes))

    def set_pids_max(self, pids_max: int) -> None:
        write(self._dir("pids") / "pids.max", str(pids_max))

    def set_rt_runtime(
        self, runtime_us: int | str, cap_to_free: bool = False, period_us: int | None = None
    ) -> int | None:
        """Reserve real-time bandwidth (µs of every rt period) for this group.

        With CONFIG_RT_GROUP_SCHED on v1, a new group has cpu.rt_runtime_us = 0 and
        sched_setscheduler(SCHED_FIFO) fails with EPERM inside it, even for root. A group may
        not hold more than its parent, and siblings together not more than the parent either,
        so the `virtbench` parent is raised first (top-down) to what its groups hold; destroy()
        lowers it again. RT_AUTO takes what is free, up to the host's own share (950000/1000000
        by default). A running group may be changed too: lowered bottom-up (groups nested in
        it that hold a budget, e.g. podman's, then the group, then the parent), raised
        top-down. `period_us` (default: the host's rt period) sets a shorter period, with the
        runtime in µs of that period. `cap_to_free` grants what is free instead of raising when
        less is free than asked. Returns the granted runtime, or None where not applicable (v2,
        no RT group scheduling).
        """
        if rt.rt_layout(self.layout) is None:
            return None
        granted = rt.grant(
            self.layout, self.name, self._dir("cpu"), runtime_us, cap_to_free, period_us
        )
        assert granted is not None
        self.rt_runtime_us, self.rt_period_us = granted
        return granted[0]

    def drop_rt(self) -> None:
        """Give the group's real-time bandwidth back now (best effort). The kernel counts a
        removed group's bandwidth until the group is freed, which can take seconds after its
        tasks die, so zero it while the group still exists; it fails (EBUSY) only while
        SCHED_FIFO/RR tasks still run in it, and destroy() tries again."""
        f = self._dirs.get("cpu", Path("/nonexistent")) / "cpu.rt_runtime_us"
        if rt.rt_layout(self.layout) is None or not f.exists():
            return
        with contextlib.suppress(OSError, ValueError):
            if int(read(f)) != 0:
                rt.rt_write(f, 0, strict=False, timeout=0.2)
        rt.release_rt(self.layout)

    def drop_controller(self, ctrl: str) -> None:
        """Stop using one v1 hierarchy (and any controller co-mounted with it): its empty
        directory goes, and the parent's weight is recomputed without it."""
        d = self._dirs.get(ctrl)
        if d is None:
            return
        for c in [c for c, other in self._dirs.items() if other == d]:
            del self._dirs[c]
        _rmdir_tree(d, time.monotonic() + 2)
        rebalance_parent(self.layout)

    # --- membership ---------------------------------------------------------------------
    def add_pid(self, pid: int) -> None:
        """Move a process with all its threads (writing cgroup.procs moves the thread group)."""
        for d in self._dirs.values():
            write(d / "cgroup.procs", str(pid))

    def add_thread(self, tid: int) -> None:
        """Move one thread (v1 `tasks`); v2 only moves whole processes outside threaded mode."""
        if self.layout.version == "v2":
            # domain cgroups in v2 refuse single threads; moving the owner is the closest
            tgid = _tgid(tid)
            self.add_pid(tgid)
            return
        for d in self._dirs.values():
            write(d / "tasks", str(tid))

    # --- accounting ---------------------------------------------------------------------
    def paths(self) -> dict[str, str]:
        """controller -> absolute directory (keys as Accounting.cgroups expects)."""
        return {c: str(d) for c, d in self._dirs.items()}

    def exists(self) -> bool:
        return any(d.is_dir() for d in self._dirs.values())

    def cpu_usage_s(self) -> float:
        if self.layout.version == "v2":
            return self.cpu_stat().get("usage_usec", 0) / 1e6
        return int(read(self._dir("cpuacct") / "cpuacct.usage")) / 1e9

    def cpu_stat(self) -> dict[str, int]:
        """nr_periods, nr_throttled, throttled_time (v1, ns) or throttled_usec/usage_usec (v2)."""
        try:
            return parse_kv(read(self._dir("cpu") / "cpu.stat"))
        except OSError:
            return {}

    def memory_stat(self) -> dict[str, int]:
        """Current/peak usage and OOM kills, same keys on both versions."""
        out: dict[str, int] = {}
        d = self._dir("memory")
        if self.layout.version == "v2":
            files = {"usage_bytes": "memory.current", "max_usage_bytes": "memory.peak"}
            events = parse_kv(safe_read(d / "memory.events"))
            out["oom_kills"] = events.get("oom_kill", 0)
        else:
            files = {
                "usage_bytes": "memory.usage_in_bytes",
                "max_usage_bytes": "memory.max_usage_in_bytes",
                "failcnt": "memory.failcnt",
            }
            ctl = parse_kv(safe_read(d / "memory.oom_control"))
            out["oom_kills"] = ctl.get("oom_kill", 0)
        for key, fname in files.items():
            raw = safe_read(d / fname)
            if raw.isdigit():
                out[key] = int(raw)
        return out

    def pids(self) -> list[int]:
        """PIDs of all processes in the group (and any nested groups a runtime created)."""
        ctrl = "unified" if self.layout.version == "v2" else "pids"
        base = self._dirs.get(ctrl) or next(iter(self._dirs.values()))
        found: set[int] = set()
        for procs in walk_files(base, "cgroup.procs"):
            for line in safe_read(procs).split():
                if line.isdigit():
                    found.add(int(line))
        return sorted(found)

    # --- teardown -----------------------------------------------------------------------
    def destroy(self, timeout: float = 5.0) -> None:
        """Kill remaining tasks and remove the directories; idempotent."""
        deadline = time.monotonic() + timeout
        while True:
            pids = [p for p in self.pids() if p != os.getpid()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.drop_rt()  # before rmdir: a removed group's bandwidth lingers in the kernel
        for d in [*self._dirs.values(), *(p / self.name for p in self.layout.other_parent_dirs())]:
            _rmdir_tree(d, deadline)
        if "/" not in self.name:
            cleanup.release(claim_name(self.name))
        rebalance_parent(self.layout)
        rt.release_rt(self.layout)


# Environment groups that hold an idle neighbour now (its one sleeping process), by their
# name under the `virtbench` parent ("vb-x" or "vb-budget/vb-x"): they lend no weight to their
# budget or to the parent (rebalance_parent). In-process: the one measuring run marks them
# for its scene (`idle_weight`); a group is unmarked before it goes.
_IDLE: set[str] = set()


def _key(group: Path) -> str:
    """A group's name under the parent, from its directory in any hierarchy."""
    return "/".join(p for p in group.parts[-2:] if p.startswith(NAME_PREFIX))


@contextlib.contextmanager
def idle_weight(dirs: list[str], layout: Layout | None = None) -> Iterator[None]:
    """While inside, the environment groups at `dirs` (each one's `Accounting.cgroups` cpu or
    unified directory) count as idle: their budget and the parent weigh only the busy ones.

    Why: CFS hands a group's weight to whichever children are runnable, so three idle
    neighbours' default weights went to the one busy target: beside them its budget weighed
    4x what it weighed alone against the host's own tasks (the load generator, softirq
    work), and a CPU-bound 70 kB container served 10 % less at the same CPU (issue 38). Xen's
    credit scheduler, the papers', shares credit among active domains only."""
    keys = [_key(Path(d)) for d in dirs if d]
    if not keys:  # nothing to mark: leave the host's weights alone
        yield
        return
    layout = layout or Layout.detect()
    _IDLE.update(keys)
    rebalance_parent(layout)
    try:
        yield
    finally:
        _IDLE.difference_update(keys)
        rebalance_parent(layout)


def rebalance_parent(layout: Layout) -> None:
    """Give the `virtbench` parent one default weight per busy environment.

    Without this, every group under the parent (containers, VMs, neighbours of several runs)
    shares ONE default weight against the host's root-level tasks, so under host load a
    container gets less CPU than the same process run natively: a harness artefact, not a
    cost of containers. Siblings' relative weights (256 vs 1024) are unaffected. A group
    holding environments of its own (a shared CPU budget, cgroups/budget.py) counts as that
    many and gets their weight too: two environments weigh the same whether or not they share
    a budget. An environment marked idle (`idle_weight`) counts as none: its weight would go
    to the busy ones beside it.
    """
    parent = layout.parent_dirs().get("cpu" if layout.version == "v1" else "unified")
    if parent is None or not parent.is_dir():
        return
    if layout.version == "v1":
        fname, unit, top = "cpu.shares", 1024, SHARES_MAX
    else:
        fname, unit, top = "cpu.weight", 100, 10000
    n = 0
    for group in _ours(parent):
        inner = _ours(group)
        if not inner:
            n += _key(group) not in _IDLE
            continue
        busy = max(1, sum(_key(g) not in _IDLE for g in inner))
        n += busy
        with contextlib.suppress(OSError):  # going away meanwhile
            (group / fname).write_text(str(min(top, unit * busy)))
    with contextlib.suppress(OSError):  # the parent may be going away under `cleanup`
        (parent / fname).write_text(str(min(top, unit * max(1, n))))


def _ours(d: Path) -> list[Path]:
    """vb- groups directly inside `d`."""
    try:
        return [p for p in d.iterdir() if p.is_dir() and p.name.startswith(NAME_PREFIX)]
    except OSError:
        return []


def _require_dir(d: Path) -> None:
    if not d.is_dir():
        raise PlatformError(f"cgroup {d} does not exist (a group inside it cannot be made)")


def _enable_v2_controllers(d: Path) -> None:
    """Delegate our controllers to d's children (only those d itself offers)."""
    try:
        offered = set(read(d / "cgroup.controllers").split())
        enabled = set(read(d / "cgroup.subtree_control").split())
    except OSError:
        return
    want = [c for c in V2_CONTROLLERS if c in offered and c not in enabled]
    if want:
        with contextlib.suppress(OSError):  # a controller busy elsewhere must not stop us
            (d / "cgroup.subtree_control").write_text(" ".join("+" + c for c in want))


def _cpuset_file(layout: Layout, what: str) -> str:
    # v1 cpusets mounted with `noprefix` (rare) lack the prefix; prefer what exists
    return f"cpuset.{what}"


def _inherit_cpuset(d: Path) -> None:
    for what in ("cpus", "mems"):
        f = d / f"cpuset.{what}"
        if f.exists() and not read(f):
            write(f, read(d.parent / f"cpuset.{what}"))


def _cpu_list(cpus: list[int]) -> str:
    return ",".join(str(c) for c in sorted(set(cpus)))


def _tgid(tid: int) -> int:
    for line in safe_read(Path(f"/proc/{tid}/status")).splitlines():
        if line.startswith("Tgid:"):
            return int(line.split()[1])
    return tid


def _rmdir_tree(d: Path, deadline: float) -> None:
    """rmdir children first (a runtime may nest groups); retry while tasks are exiting."""
    if not d.is_dir():
        return
    for child in sorted((p for p in d.iterdir() if p.is_dir()), reverse=True):
        _rmdir_tree(child, deadline)
    while True:
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise PlatformError(f"cannot remove cgroup {d}: {exc.strerror}") from exc
            time.sleep(0.02)


def leftovers(layout: Layout | None = None) -> list[str]:
    """Names of vb- groups under the virtbench parent in any hierarchy."""
    try:
        layout = layout or Layout.detect()
    except PlatformError:
        return []
    names: set[str] = set()
    for parent in [*layout.parent_dirs().values(), *layout.other_parent_dirs()]:
        if parent.is_dir():
            names.update(p.name for p in parent.iterdir() if p.name.startswith(NAME_PREFIX))
    return sorted(names)


def claim_name(name: str) -> str:
    """The owner claim `Cgroup.create` writes for a top-level group before making it."""
    return f"{name}.cgroup"


@cleanup.register("cgroups")
def clean(layout: Layout | None = None) -> list[str]:
    try:
        layout = layout or Layout.detect()
    except PlatformError:
        return []
    removed = []
    for name in leftovers(layout):
        state = cleanup.owner(name, claim_name(name))
        if state == cleanup.NO_RECORD:
            removed.append(cleanup.left_alone(f"cgroup {PARENT}/{name}"))
        if state != cleanup.DEAD:
            continue  # a live virtbench process's, or not known to be ours
        group = Cgroup(name, layout)
        before = {p: cleanup.command_of(p) or "?" for p in group.pids() if p != os.getpid()}
        group.destroy()
        removed.extend(cleanup.ended(before, f"cgroup {name}"))
        removed.append(f"cgroup {PARENT}/{name}")
    rt.release_rt(layout)
    for parent in [*layout.parent_dirs().values(), *layout.other_parent_dirs()]:
        with contextlib.suppress(OSError):  # busy while another run uses it: keep it
            parent.rmdir()
    return removed
