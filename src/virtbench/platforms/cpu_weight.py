"""The CpuWeight capability as native, container and vm platforms implement it.

An environment with its own cgroup (container, VM in a cgroup) gets the weight written to that
cgroup and restored afterwards (the runner reuses the target for the next cell). An
environment without one (native on an RT-group-scheduling host, a VM without root) gets a
`vb-` cgroup its processes are moved into as they appear (polled every 50 ms: a process runs
unweighted for at most that long).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

from ..cgroups import Cgroup, Layout, shares_to_weight
from ..naming import NAME_PREFIX
from ..procfs import descendants
from .base import Platform

POLL_S = 0.05


@contextlib.contextmanager
def weighted(platform: Platform, shares: int, whose: str) -> Iterator[str]:
    """Give `platform` `shares` (cpu.shares scale) while the block runs; yields what was set
    where. `whose` names the cgroup the weight lands on (e.g. "the QEMU process's cgroup")."""
    knob = _own_cgroup_knob(platform.accounting().cgroups)
    if knob is None:
        with _adopted(platform, shares):
            yield f"cpu.shares={shares} on a vb- cgroup its processes join"
        return
    path, kind = knob
    value = str(shares if kind == "shares" else shares_to_weight(shares))
    with _set_knob(path, value):
        yield f"{path.name}={value} on {whose} {path.parent}"


@contextlib.contextmanager
def lifted_quota(platform: Platform) -> Iterator[str | None]:
    """Lift a CFS quota on the environment's own cgroup while the block runs, then put it
    back; yields what was lifted where, or None if it had no quota there.

    Why: in a weights cell the environments share one CPU, which is then their budget. A quota
    at or below a fair share (the shipped campaigns give servers half a CPU each) would cap
    each environment before its weight could count: two at 50 % on one CPU split it 50:50
    whatever the weights say."""
    set_on = _own_quota_file(platform.accounting().cgroups)
    if set_on is None:
        yield None
        return
    path, old = set_on
    if path.name == "cpu.cfs_quota_us":
        with _set_knob(path, "-1"):
            yield f"cpu.cfs_quota_us={old} lifted to -1 on {path.parent}"
        return
    period = old.partition(" ")[2]
    with _set_knob(path, f"max {period or 100000}"):
        yield f"cpu.max='{old}' lifted to max on {path.parent}"


def own_quota(platform: Platform) -> str | None:
    """The CFS quota on the environment's own cgroup now, as "QUOTA PERIOD" (the form of
    `CpuBudget.quota_in_effect`); None: no quota there (none set, or lifted by `lifted_quota`,
    which lifts this same file)."""
    try:
        set_on = _own_quota_file(platform.accounting().cgroups)
        if set_on is None:
            return None
        path, quota = set_on
        if path.name == "cpu.max":
            return quota
        return f"{quota} {Path(path.parent, 'cpu.cfs_period_us').read_text().strip()}"
    except OSError:  # the environment is gone: it has no quota in effect
        return None


def _own_quota_file(cg: dict[str, str]) -> tuple[Path, str] | None:
    """The quota file of the environment's own cgroup (v1 cpu.cfs_quota_us, v2 cpu.max) and
    its value, when a quota is set there (-1 / "max": none)."""
    if "cpu" in cg and Path(cg["cpu"], "cpu.cfs_quota_us").exists():
        path = Path(cg["cpu"], "cpu.cfs_quota_us")
        quota = path.read_text().strip()
        return None if quota.lstrip("-").isdigit() and int(quota) < 0 else (path, quota)
    if "unified" in cg and Path(cg["unified"], "cpu.max").exists():
        path = Path(cg["unified"], "cpu.max")
        value = path.read_text().strip()
        return None if value.startswith("max") else (path, value)
    return None


def _own_cgroup_knob(cg: dict[str, str]) -> tuple[Path, str] | None:
    """The weight file of the environment's own cgroup and the value format, if it has one."""
    if "cpu" in cg and Path(cg["cpu"], "cpu.shares").exists():
        return Path(cg["cpu"], "cpu.shares"), "shares"
    if "unified" in cg and Path(cg["unified"], "cpu.weight").exists():
        return Path(cg["unified"], "cpu.weight"), "weight"
    return None


def _write(path: Path, value: str) -> None:
    path.write_text(value)


@contextlib.contextmanager
def _set_knob(path: Path, value: str) -> Iterator[None]:
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
def _adopted(platform: Platform, shares: int) -> Iterator[Cgroup]:
    """A vb- cgroup with `shares` that the environment's processes are moved into: on cgroup
    v1 in the cpu hierarchy only, since the weight is a cpu knob and the environment's own
    group (cpuacct, memory, blkio: what the sampler reads for it) must keep accounting them."""
    cg = Cgroup.create(f"{NAME_PREFIX}{secrets.token_hex(3)}-w", cpu_weight=shares)
    cpu_procs = Path(cg.paths()["cpu"], "cgroup.procs") if cg.layout.version == "v1" else None
    stop = threading.Event()
    moved: set[int] = set()

    def join(pid: int) -> None:
        if cpu_procs is None:
            cg.add_pid(pid)  # v2: one hierarchy
        else:
            _write(cpu_procs, str(pid))

    def adopt() -> None:
        while not stop.is_set():
            with contextlib.suppress(Exception):  # processes come and go
                for pid in descendants(platform.accounting().pids):
                    if pid not in moved:
                        join(pid)
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
        if cpu_procs is None:
            for pid in cg.pids():
                for procs in _root_procs(cg.layout):
                    with contextlib.suppress(OSError):
                        _write(procs, str(pid))
        else:
            _cpu_home(cpu_procs, cg.layout.parent_dirs()["cpu"].parent / "cgroup.procs")
        cg.destroy()


def _cpu_home(procs: Path, root: Path) -> None:
    """Move every process out of the -w group's cpu directory to the cpu root (where they
    were: their own group has no cpu controller), also those forked meanwhile."""
    for _ in range(50):
        try:
            pids = procs.read_text().split()
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):  # exited meanwhile
                _write(root, pid)
