"""Real-time bandwidth of groups (cgroup v1 with CONFIG_RT_GROUP_SCHED): the budget arithmetic
and the order of writes the kernel accepts.

A group may run SCHED_FIFO/RR tasks for cpu.rt_runtime_us of every cpu.rt_period_us. A group
may not hold more than its parent, and siblings together not more than the parent either, so
the `virtbench` parent is raised first (top-down) to what its groups hold and lowered last
(bottom-up). All virtbench processes share one budget: grants happen under a file lock.
Scenarios that re-divide the budget (scenarios/rt_budget.py) read it with `headroom`.
"""

from __future__ import annotations

import contextlib
import errno
import time
from pathlib import Path

from ..errors import PlatformError
from ..filelock import file_lock
from .layout import PARENT, Layout, read, walk_files

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
    return root / PARENT, int(read(root / "cpu.rt_period_us"))


def rt_supported(layout: Layout | None = None) -> bool:
    try:
        return rt_layout(layout or Layout.detect()) is not None
    except PlatformError:
        return False


def rt_locked() -> contextlib.AbstractContextManager[None]:
    """One budget for all virtbench processes: grant under a file lock."""
    return file_lock(RT_LOCK)


def rt_of(d: Path) -> tuple[int, int]:
    """(runtime, period) of a group; runtime -1 (unlimited) counts as its whole period."""
    period = int(read(d / "cpu.rt_period_us"))
    runtime = int(read(d / "cpu.rt_runtime_us"))
    return (period if runtime < 0 else runtime), period


def rt_children(parent: Path, exclude: str | None = None) -> dict[str, int]:
    """name -> rt runtime (µs per parent period) of each child group of `parent`."""
    out: dict[str, int] = {}
    if not parent.is_dir():
        return out
    _rt, period = rt_of(parent)
    for d in parent.iterdir():
        if d.is_dir() and d.name != exclude:
            with contextlib.suppress(OSError, ValueError):
                runtime, p = rt_of(d)
                # rounded up: the kernel refuses a parent below the sum of its children's
                # runtime/period ratios, which differ from it when a child has its own period
                out[d.name] = -(-runtime * period // p)
    return out


def rt_free(parent: Path, period: int, exclude: str | None = None) -> int:
    """Runtime per `period` a new group under `parent` can get: the hierarchy root's share
    less what the root's other children and the parent's children already hold."""
    root = parent.parent
    root_rt, root_period = rt_of(root)
    cap = root_rt * period // root_period
    cap -= sum(v for k, v in rt_children(root).items() if k != parent.name) * period // root_period
    held = sum(rt_children(parent, exclude=exclude).values())
    return max(0, cap - held)


def headroom(layout: Layout) -> tuple[int, int, int] | None:
    """(µs free for a new group, the host's rt period, the host's own rt runtime), all per the
    host's rt period, under the virtbench parent; None where not applicable."""
    rt = rt_layout(layout)
    if rt is None:
        return None
    parent, period = rt
    host_runtime, host_period = rt_of(parent.parent)
    return rt_free(parent, period), period, host_runtime * period // host_period


def rt_write(path: Path, value: int, strict: bool = True, timeout: float = 1.0) -> None:
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


def rt_set(d: Path, runtime: int, period: int) -> None:
    """Set one group's (runtime, period) through whichever intermediate state has the smaller
    runtime/period ratio: the kernel checks every single write against the parent."""
    try:
        old_runtime, old_period = rt_of(d)
    except (OSError, ValueError):  # not set up yet: period first
        old_runtime, old_period = period + 1, 1
    if old_period == period:
        rt_write(d / "cpu.rt_runtime_us", runtime)
    elif runtime * period <= old_runtime * old_period:  # runtime/old_p <= old_r/period
        rt_write(d / "cpu.rt_runtime_us", runtime)
        rt_write(d / "cpu.rt_period_us", period)
    else:
        rt_write(d / "cpu.rt_period_us", period)
        rt_write(d / "cpu.rt_runtime_us", runtime)


def grant(
    layout: Layout,
    name: str,
    group_dir: Path,
    runtime_us: int | str,
    cap_to_free: bool = False,
    period_us: int | None = None,
) -> tuple[int, int] | None:
    """Give the group `name` (its cpu directory `group_dir`) `runtime_us` (or RT_AUTO: what is
    free) of every `period_us` (default: the host's rt period); returns (runtime, period)
    granted, or None where not applicable. Groups nested in it that hold a budget (podman's)
    follow. Lowering goes bottom-up, raising top-down. `cap_to_free` grants what is free
    instead of failing when less is free than asked."""
    rt = rt_layout(layout)
    if rt is None:
        return None
    parent, host_period = rt
    period = period_us or host_period
    with rt_locked():
        free = rt_free(parent, host_period, exclude=name) * period // host_period
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
                    f"cannot reserve rt_runtime_us = {want} for {name}: only {free} "
                    f"of every {period} µs is free under {parent} (other groups hold the "
                    f'rest); allowed: 0..{free} or "auto"'
                )
        held = sum(rt_children(parent, exclude=name).values())
        want_norm = -(-want * host_period // period)  # in the parent's period, as `held`
        old_norm = rt_children(parent).get(name, 0) if group_dir.is_dir() else 0
        nested = [
            f.parent
            for f in walk_files(group_dir, "cpu.rt_runtime_us")
            if f.parent != group_dir and int(read(f)) != 0
        ]
        if want_norm > old_norm:  # top-down
            rt_write(parent / "cpu.rt_runtime_us", held + want_norm)
            for d in [group_dir, *nested]:
                rt_set(d, want, period)
        else:  # bottom-up
            for d in [*nested[::-1], group_dir]:
                rt_set(d, want, period)
            rt_write(parent / "cpu.rt_runtime_us", held + want_norm, strict=False)
    return want, period


def release_rt(layout: Layout) -> None:
    """Lower the virtbench parent's rt runtime to what its remaining groups hold (0 when
    none), so virtbench keeps no real-time bandwidth from the rest of the host."""
    rt = rt_layout(layout)
    if rt is None or not rt[0].is_dir():
        return
    parent, _period = rt
    with rt_locked(), contextlib.suppress(OSError, ValueError):
        held = sum(rt_children(parent).values())
        if rt_of(parent)[0] != held:
            rt_write(parent / "cpu.rt_runtime_us", held, strict=False)
