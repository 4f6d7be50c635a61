"""Small readers of /proc: one read(2) of a file, a process tree, a process's other threads.

Ground level (imports nothing of virtbench): the sampler (`metrics/`), the CPU-weight
capability and the VM platform all walk task trees, and a platform must not import the
metrics layer that reads it. Every reader takes a `root` so unit tests run against captured
copies of real /proc files.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path("/")


def read_text(path: str) -> str:
    """One read(2) of a small /proc or /sys file: several times cheaper than Path.read_text,
    which matters at 8 environments x their tasks every second."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536).decode()
    finally:
        os.close(fd)


def prefix(root: Path) -> str:
    """`root` as a string to put before an absolute /proc or /sys path."""
    return str(root).rstrip("/")


def ints(path: Path | str) -> list[int]:
    """The whitespace-separated integers of a file (a task list, `children`); [] if unreadable."""
    try:
        return [int(x) for x in read_text(str(path)).split()]
    except (OSError, ValueError):
        return []


def descendants(pids: list[int], root: Path = ROOT) -> list[int]:
    """PIDs and all their descendants, via /proc/PID/task/TID/children (no /proc scan)."""
    seen: list[int] = []
    todo = list(pids)
    proc = prefix(root) + "/proc/"
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        task_dir = f"{proc}{pid}/task/"
        try:
            tids = os.listdir(task_dir)
        except OSError:
            continue
        for tid in tids:
            todo.extend(ints(task_dir + tid + "/children"))
    return seen


def other_threads(pids: list[int], named: list[int], root: Path = ROOT) -> list[int]:
    """Threads of `pids` that are not `named`: for a VM the QEMU main loop and I/O threads
    (virtio/e1000 back ends, tap I/O) beside its vCPU threads, i.e. the work Xen's Dom0 or
    qemu-dm did for the guest. Empty when no thread is named."""
    if not named:
        return []
    known = set(named)
    proc = prefix(root) + "/proc/"
    out: list[int] = []
    for pid in pids:
        try:
            out.extend(
                t for t in (int(x) for x in os.listdir(f"{proc}{pid}/task")) if t not in known
            )
        except (OSError, ValueError):
            continue
    return out
