"""Control groups on cgroup v1 (legacy/hybrid) and v2 (unified): create, limit, account, destroy.

Every group virtbench makes lives under a `virtbench` parent and is named with NAME_PREFIX:
v1 `/sys/fs/cgroup/<controller>/virtbench/vb-xxxx` (one directory per hierarchy), v2
`/sys/fs/cgroup/virtbench/vb-xxxx`. The registered cleaner removes leftovers by that prefix.

Weights are given on the v1 `cpu.shares` scale (2..262144, default 1024; the seeds use 256 vs
1024) and converted to v2 `cpu.weight` with the formula crun and systemd use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from . import cleanup, hostinfo
from .errors import PlatformError
from .filelock import file_lock
from .naming import NAME_PREFIX

ROOT = Path("/sys/fs/cgroup")
PARENT = "virtbench"
# v1 controllers we use; each maps to the hierarchy it is mounted in (may be co-mounted).
V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "blkio", "pids")
V2_CONTROLLERS = ("cpu", "cpuset", "memory", "io", "pids")
SHARES_MIN, SHARES_MAX = 2, 262144


def version() -> str:
    """'v1' (legacy or hybrid), 'v2' (unified) or 'none'."""
    return hostinfo.cgroup_version()


def shares_to_weight(shares: int) -> int:
    """v1 cpu.shares (2..262144) -> v2 cpu.weight (1..10000), as crun/systemd convert it."""
    shares = max(SHARES_MIN, min(SHARES_MAX, shares))
    return 1 + ((shares - 2) * 9999) // 262142


def v1_hierarchies(mountinfo: str) -> list[tuple[Path, set[str]]]:
    """(mount point, options) of every v1 hierarchy, from /proc/self/mountinfo text."""
    found = []
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        if not sep:
            continue
        fields, tail = pre.split(), post.split()
        if len(tail) >= 3 and tail[0] == "cgroup":
            found.append((Path(fields[4]), set(tail[2].split(","))))
    return found


def hybrid_v2_mounts(mountinfo: str) -> list[Path]:
    """cgroup2 mount points beside v1 hierarchies (e.g. /sys/fs/cgroup/unified)."""
    found = []
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        if sep and post.split()[:1] == ["cgroup2"]:
            found.append(Path(pre.split()[4]))
    return found


def parse_v1_mounts(mountinfo: str) -> dict[str, Path]:
    """controller -> mount point of its v1 hierarchy (co-mounted ones share a path)."""
    result: dict[str, Path] = {}
    for mount, options in v1_hierarchies(mountinfo):
        for ctrl in V1_CONTROLLERS:
            if ctrl in options:
                result.setdefault(ctrl, mount)
    return result


def parse_kv(text: str) -> dict[str, int]:
    """`key value` lines (cpu.stat, memory.stat, memory.events) -> dict of ints."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


@dataclass
class Layout:
    """Where the hierarchies are: v2 has one root; v1 one mount per controller."""

    version: str
    v2_root: Path | None = None
    v1_mounts: dict[str, Path] | None = None
    # every v1 hierarchy (devices, freezer, hugetlb, name=systemd...): OCI runtimes create
    # their group in all of them, so teardown and cleanup must look there too
    v1_others: list[Path] | None = None

    @classmethod
    def detect(cls, root: Path = ROOT) -> Layout:
        if (root / "cgroup.controllers").exists():
            return cls("v2", v2_root=root)
        try:
            text = Path("/proc/self/mountinfo").read_text()
        except OSError:
            text = ""
        mounts = parse_v1_mounts(text)
        if not mounts:
            raise PlatformError(f"no cgroup hierarchy found under {root}: is cgroupfs mounted?")
        used = set(mounts.values())
        others = [m for m, _ in v1_hierarchies(text) if m not in used]
        # hybrid hosts: crun also makes the group in the empty cgroup2 mount (unified)
        others += hybrid_v2_mounts(text)
        return cls("v1", v1_mounts=mounts, v1_others=others)

    def parent_dirs(self) -> dict[str, Path]:
        """controller -> the `virtbench` parent directory in its hierarchy."""
        if self.version == "v2":
            assert self.v2_root is not None
            return {"unified": self.v2_root / PARENT}
        assert self.v1_mounts is not None
        return {c: m / PARENT for c, m in self.v1_mounts.items()}

    def other_parent_dirs(self) -> list[Path]:
        """`virtbench` parents in hierarchies we do not manage but runtimes populate."""
        return [m / PARENT for m in self.v1_others or []]


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise PlatformError(f"cannot write {value!r} to {path}: {exc.strerror or exc}") from exc


def _read(path: Path) -> str:
    return path.read_text().strip()


class Cgroup:
    """One control group across all hierarchies virtbench uses."""

    def __init__(self, name: str, layout: Layout) -> None:
        if not name.startswith(NAME_PREFIX):
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
            self._dirs["unified"].mkdir(exist_ok=True)
            rebalance_parent(self.layout)
            return
        for ctrl, d in self._dirs.items():
            d.parent.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                # v1 cpuset groups start empty and refuse tasks until cpus/mems are set
                _inherit_cpuset(d.parent)
            d.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                _inherit_cpuset(d)
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
            _write(self._dir("cpu") / "cpu.weight", str(shares_to_weight(shares)))
        else:
            _write(self._dir("cpu") / "cpu.shares", str(shares))

    def set_cpu_quota(self, quota_us: int | None, period_us: int | None = None) -> None:
        """CFS bandwidth: `quota_us` per `period_us` (None quota = unlimited)."""
        period = period_us or 100_000
        if self.layout.version == "v2":
            quota = "max" if quota_us is None or quota_us < 0 else str(quota_us)
            _write(self._dir("cpu") / "cpu.max", f"{quota} {period}")
        else:
            d = self._dir("cpu")
            _write(d / "cpu.cfs_period_us", str(period))
            _write(d / "cpu.cfs_quota_us", str(-1 if quota_us is None else quota_us))

    def set_cpuset(self, cpus: list[int]) -> None:
        if not cpus:
            raise PlatformError("cpuset must name at least one CPU")
        _write(self._dir("cpuset") / _cpuset_file(self.layout, "cpus"), _cpu_list(cpus))

    def set_memory_limit(self, limit_bytes: int) -> None:
        name = "memory.max" if self.layout.version == "v2" else "memory.limit_in_bytes"
        _write(self._dir("memory") / name, str(limit_bytes))

    def set_pids_max(self, pids_max: int) -> None:
        _write(self._dir("pids") / "pids.max", str(pids_max))

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
        rt = rt_layout(self.layout)
        if rt is None:
            return None
        parent, host_period = rt
        period = period_us or host_period
        with _rt_locked():
            free = _rt_free(parent, host_period, exclude=self.name) * period // host_period
            if period != host_period:  # 1 µs for rounding: the parent counts it rounded up
                free = max(0, free - 1)
            if runtime_us == RT_AUTO:
                want = free
            else:
                want = int(runtime_us)
                if want > free and cap_to_free:
                    want = free
                elif want > free:
                    raise PlatformError(
                        f"cannot reserve rt_runtime_us = {want} for {self.name}: only {free} "
                        f"of every {period} µs is free under {parent} (other groups hold the "
                        f'rest); allowed: 0..{free} or "auto"'
                    )
            child = self._dir("cpu")
            held = sum(_rt_children(parent, exclude=self.name).values())
            want_norm = -(-want * host_period // period)  # in the parent's period, as `held`
            old_norm = _rt_children(parent).get(self.name, 0) if child.is_dir() else 0
            nested = [
                f.parent
                for f in _walk_files(child, "cpu.rt_runtime_us")
                if f.parent != child and int(_read(f)) != 0
            ]
            if want_norm > old_norm:  # top-down
                _rt_write(parent / "cpu.rt_runtime_us", held + want_norm)
                for d in [child, *nested]:
                    _rt_set(d, want, period)
            else:  # bottom-up
                for d in [*nested[::-1], child]:
                    _rt_set(d, want, period)
                _rt_write(parent / "cpu.rt_runtime_us", held + want_norm, strict=False)
        self.rt_runtime_us, self.rt_period_us = want, period
        return want

    def drop_rt(self) -> None:
        """Give the group's real-time bandwidth back now (best effort). The kernel counts a
        removed group's bandwidth until the group is freed, which can take seconds after its
        tasks die, so zero it while the group still exists; it fails (EBUSY) only while
        SCHED_FIFO/RR tasks still run in it, and destroy() tries again."""
        rt = rt_layout(self.layout)
        f = self._dirs.get("cpu", Path("/nonexistent")) / "cpu.rt_runtime_us"
        if rt is None or not f.exists():
            return
        with contextlib.suppress(OSError, ValueError):
            if int(_read(f)) != 0:
                _rt_write(f, 0, strict=False, timeout=0.2)
        release_rt(self.layout)

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
            _write(d / "cgroup.procs", str(pid))

    def add_thread(self, tid: int) -> None:
        """Move one thread (v1 `tasks`); v2 only moves whole processes outside threaded mode."""
        if self.layout.version == "v2":
            # domain cgroups in v2 refuse single threads; moving the owner is the closest
            tgid = _tgid(tid)
            self.add_pid(tgid)
            return
        for d in self._dirs.values():
            _write(d / "tasks", str(tid))

    # --- accounting ---------------------------------------------------------------------
    def paths(self) -> dict[str, str]:
        """controller -> absolute directory (keys as Accounting.cgroups expects)."""
        return {c: str(d) for c, d in self._dirs.items()}

    def exists(self) -> bool:
        return any(d.is_dir() for d in self._dirs.values())

    def cpu_usage_s(self) -> float:
        if self.layout.version == "v2":
            return self.cpu_stat().get("usage_usec", 0) / 1e6
        return int(_read(self._dir("cpuacct") / "cpuacct.usage")) / 1e9

    def cpu_stat(self) -> dict[str, int]:
        """nr_periods, nr_throttled, throttled_time (v1, ns) or throttled_usec/usage_usec (v2)."""
        try:
            return parse_kv(_read(self._dir("cpu") / "cpu.stat"))
        except OSError:
            return {}

    def memory_stat(self) -> dict[str, int]:
        """Current/peak usage and OOM kills, same keys on both versions."""
        out: dict[str, int] = {}
        d = self._dir("memory")
        if self.layout.version == "v2":
            files = {"usage_bytes": "memory.current", "max_usage_bytes": "memory.peak"}
            events = parse_kv(_safe_read(d / "memory.events"))
            out["oom_kills"] = events.get("oom_kill", 0)
        else:
            files = {
                "usage_bytes": "memory.usage_in_bytes",
                "max_usage_bytes": "memory.max_usage_in_bytes",
                "failcnt": "memory.failcnt",
            }
            ctl = parse_kv(_safe_read(d / "memory.oom_control"))
            out["oom_kills"] = ctl.get("oom_kill", 0)
        for key, fname in files.items():
            raw = _safe_read(d / fname)
            if raw.isdigit():
                out[key] = int(raw)
        return out

    def pids(self) -> list[int]:
        """PIDs of all processes in the group (and any nested groups a runtime created)."""
        ctrl = "unified" if self.layout.version == "v2" else "pids"
        base = self._dirs.get(ctrl) or next(iter(self._dirs.values()))
        found: set[int] = set()
        for procs in _walk_files(base, "cgroup.procs"):
            for line in _safe_read(procs).split():
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
        rebalance_parent(self.layout)
        release_rt(self.layout)


def rebalance_parent(layout: Layout) -> None:
    """Give the `virtbench` parent one default weight per child group.

    Without this, every group under the parent (containers, VMs, neighbours of several runs)
    shares ONE default weight against the host's root-level tasks, so under host load a
    container gets less CPU than the same process run natively: a harness artefact, not a
    cost of containers. Siblings' relative weights (256 vs 1024) are unaffected.
    """
    parent = layout.parent_dirs().get("cpu" if layout.version == "v1" else "unified")
    if parent is None or not parent.is_dir():
        return
    n = max(1, sum(1 for p in parent.iterdir() if p.is_dir() and p.name.startswith(NAME_PREFIX)))
    if layout.version == "v1":
        fname, value = "cpu.shares", min(SHARES_MAX, 1024 * n)
    else:
        fname, value = "cpu.weight", min(10000, 100 * n)
    with contextlib.suppress(OSError):  # the parent may be going away under `cleanup`
        (parent / fname).write_text(str(value))


# --- real-time bandwidth (cgroup v1 with CONFIG_RT_GROUP_SCHED) ------------------------------
RT_AUTO = "auto"
RT_LOCK = Path("/run/virtbench/rt.lock")


def rt_layout(layout: Layout) -> tuple[Path, int] | None:
    """(virtbench parent in the cpu hierarchy, the host's rt period) where groups have
    cpu.rt_runtime_us (v1 with RT group scheduling); None elsewhere (v2 needs nothing)."""
    if layout.version != "v1" or not layout.v1_mounts or "cpu" not in layout.v1_mounts:
        return None
    root = layout.v1_mounts["cpu"]
    if not (root / "cpu.rt_runtime_us").exists():
        return None
    return root / PARENT, int(_read(root / "cpu.rt_period_us"))


def rt_supported(layout: Layout | None = None) -> bool:
    try:
        return rt_layout(layout or Layout.detect()) is not None
    except PlatformError:
        return False


def _rt_locked() -> contextlib.AbstractContextManager[None]:
    """One budget for all virtbench processes: grant under a file lock."""
    return file_lock(RT_LOCK)


def _rt_of(d: Path) -> tuple[int, int]:
    """(runtime, period) of a group; runtime -1 (unlimited) counts as its whole period."""
    period = int(_read(d / "cpu.rt_period_us"))
    runtime = int(_read(d / "cpu.rt_runtime_us"))
    return (period if runtime < 0 else runtime), period


def _rt_children(parent: Path, exclude: str | None = None) -> dict[str, int]:
    """name -> rt runtime (µs per parent period) of each child group of `parent`."""
    out: dict[str, int] = {}
    if not parent.is_dir():
        return out
    _rt, period = _rt_of(parent)
    for d in parent.iterdir():
        if d.is_dir() and d.name != exclude:
            with contextlib.suppress(OSError, ValueError):
                runtime, p = _rt_of(d)
                # rounded up: the kernel refuses a parent below the sum of its children's
                # runtime/period ratios, which differ from it when a child has its own period
                out[d.name] = -(-runtime * period // p)
    return out


def _rt_free(parent: Path, period: int, exclude: str | None = None) -> int:
    """Runtime per `period` a new group under `parent` can get: the hierarchy root's share
    less what the root's other children and the parent's children already hold."""
    root = parent.parent
    root_rt, root_period = _rt_of(root)
    cap = root_rt * period // root_period
    cap -= sum(v for k, v in _rt_children(root).items() if k != parent.name) * period // root_period
    held = sum(_rt_children(parent, exclude=exclude).values())
    return max(0, cap - held)


def _rt_write(path: Path, value: int, strict: bool = True, timeout: float = 1.0) -> None:
    """Write an rt runtime; the kernel refuses (EINVAL/EBUSY) while a just-removed group's
    bandwidth still counts, so retry briefly."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.write_text(str(value))
            return
        except OSError as exc:
            if time.monotonic() < deadline and exc.errno in (errno.EINVAL, errno.EBUSY):
                time.sleep(0.01)
                continue
            if strict:
                raise PlatformError(
                    f"cannot write rt runtime {value} to {path}: {exc.strerror or exc}"
                ) from exc
            return


def _rt_set(d: Path, runtime: int, period: int) -> None:
    """Set one group's (runtime, period) through whichever intermediate state has the smaller
    runtime/period ratio: the kernel checks every single write against the parent."""
    try:
        old_runtime, old_period = _rt_of(d)
    except (OSError, ValueError):  # not set up yet: period first
        old_runtime, old_period = period + 1, 1
    if old_period == period:
        _rt_write(d / "cpu.rt_runtime_us", runtime)
    elif runtime * period <= old_runtime * old_period:  # runtime/old_p <= old_r/period
        _rt_write(d / "cpu.rt_runtime_us", runtime)
        _rt_write(d / "cpu.rt_period_us", period)
    else:
        _rt_write(d / "cpu.rt_period_us", period)
        _rt_write(d / "cpu.rt_runtime_us", runtime)


def release_rt(layout: Layout) -> None:
    """Lower the virtbench parent's rt runtime to what its remaining groups hold (0 when
    none), so virtbench keeps no real-time bandwidth from the rest of the host."""
    rt = rt_layout(layout)
    if rt is None or not rt[0].is_dir():
        return
    parent, _period = rt
    with _rt_locked(), contextlib.suppress(OSError, ValueError):
        held = sum(_rt_children(parent).values())
        if _rt_of(parent)[0] != held:
            _rt_write(parent / "cpu.rt_runtime_us", held, strict=False)


def _enable_v2_controllers(d: Path) -> None:
    """Delegate our controllers to d's children (only those d itself offers)."""
    try:
        offered = set(_read(d / "cgroup.controllers").split())
        enabled = set(_read(d / "cgroup.subtree_control").split())
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
        if f.exists() and not _read(f):
            _write(f, _read(d.parent / f"cpuset.{what}"))


def _cpu_list(cpus: list[int]) -> str:
    return ",".join(str(c) for c in sorted(set(cpus)))


def _tgid(tid: int) -> int:
    for line in _safe_read(Path(f"/proc/{tid}/status")).splitlines():
        if line.startswith("Tgid:"):
            return int(line.split()[1])
    return tid


def _safe_read(path: Path) -> str:
    try:
        return _read(path)
    except OSError:
        return ""


def _walk_files(base: Path, fname: str) -> list[Path]:
    if not base.is_dir():
        return []
    return [Path(root) / fname for root, _dirs, files in os.walk(base) if fname in files]


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


@cleanup.register("cgroups")
def clean(layout: Layout | None = None) -> list[str]:
    try:
        layout = layout or Layout.detect()
    except PlatformError:
        return []
    removed = []
    for name in leftovers(layout):
        if cleanup.in_use(name):
            continue  # claimed by a virtbench process that is still running
        Cgroup(name, layout).destroy()
        removed.append(f"cgroup {PARENT}/{name}")
    release_rt(layout)
    for parent in [*layout.parent_dirs().values(), *layout.other_parent_dirs()]:
        with contextlib.suppress(OSError):  # busy while another run uses it: keep it
            parent.rmdir()
    return removed
