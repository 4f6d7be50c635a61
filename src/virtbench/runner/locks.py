"""Who runs what: one runner per run (a per-run lock next to the store) and one measuring
run per host unless told otherwise (a lock per live runner under /run/virtbench/runs).

Both are `flock`s: the kernel drops them when their holder dies, even by SIGKILL, so a lock
file left behind by a killed runner holds nothing and a later runner takes it over.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .. import cleanup, safefs
from ..errors import VirtbenchError

LOCKS_DIR = ".locks"  # inside the results directory, next to virtbench.db
HOST_RUNS_DIR = Path("/run/virtbench/runs")


class RunHeld(VirtbenchError):
    """Another live runner holds the run (or, host-wide, measures on this host)."""


def _try_lock(fh: IO[str]) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _pid_in(path: Path) -> str:
    try:
        return path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def _held(path: Path) -> bool:
    """True if a live process holds the flock on `path` (probed with a shared lock, which
    never waits and is dropped at once)."""
    try:  # a missing file is a free lock; a symlink or fifo planted there is no lock
        fh = os.fdopen(safefs.open_nofollow(path, os.O_RDONLY))
    except (OSError, safefs.UnsafePath):
        return False
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


@contextlib.contextmanager
def _hold(path: Path) -> Iterator[bool]:
    """Take the flock on `path` without waiting and write our PID in it; yields False (and
    holds nothing) if another process has it. Opened without following a symlink (the
    results directory may be shared), modes explicit whatever the umask."""
    safefs.make_dirs(path.parent, 0o755)
    with os.fdopen(safefs.open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644), "r+") as fh:
        if not _try_lock(fh):
            yield False
            return
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --- one runner per run ------------------------------------------------------------------
def run_lock_path(results_dir: Path, run_id: str) -> Path:
    return Path(results_dir) / LOCKS_DIR / f"{run_id}.lock"


def run_holder(results_dir: Path, run_id: str) -> str | None:
    """The PID (as text) of the live runner holding `run_id`, None if no runner holds it."""
    path = run_lock_path(results_dir, run_id)
    return _pid_in(path) if _held(path) else None


@contextlib.contextmanager
def hold_run(results_dir: Path, run_id: str) -> Iterator[None]:
    """Hold `run_id` for this process; a clear error naming the holder if another has it."""
    path = run_lock_path(results_dir, run_id)
    with _hold(path) as got:
        if not got:
            raise RunHeld(
                f"run {run_id} is being run by another virtbench (pid {_pid_in(path)});"
                f" wait for it to end or stop it, then: virtbench run --resume {run_id}"
            )
        yield


# --- one measuring run per host ----------------------------------------------------------
def other_runners(runs_dir: Path | None = None) -> list[str]:
    """PIDs of the other live virtbench runs measuring on this host, oldest file first."""
    runs_dir = runs_dir or HOST_RUNS_DIR
    try:
        entries = sorted(runs_dir.glob("*.lock"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return []
    mine = f"{os.getpid()}.lock"
    live = []
    for p in entries:
        if p.name == mine:
            continue
        if _held(p):
            live.append(p.stem)
        elif not _alive(p.stem):
            p.unlink(missing_ok=True)  # left by a killed run; its flock died with it
    return live


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def hold_host(allow_concurrent: bool, runs_dir: Path | None = None) -> Iterator[None]:
    """Register this process as a measuring run on the host for the block; refuse if another
    run measures here unless `allow_concurrent` (its samples are then labelled)."""
    runs_dir = runs_dir or HOST_RUNS_DIR
    others = other_runners(runs_dir)
    if others and not allow_concurrent:
        raise RunHeld(
            f"another virtbench run measures on this host (pid {', '.join(others)}):"
            " two runs load the machine for each other and skew both results; wait for it,"
            " or pass --allow-concurrent (the overlapping samples are labelled overlapped_runs)"
        )
    path = runs_dir / f"{os.getpid()}.lock"
    try:
        safefs.state_dir(runs_dir, 0o755)  # root's; others may read who measures
    except OSError:
        yield  # no /run/virtbench (not root): nothing to register, nothing to refuse
        return
    try:
        with _hold(path):
            yield
    finally:
        path.unlink(missing_ok=True)


STALE_LOCK_S = 60  # a registration is made, then locked at once: older and free = stale


@cleanup.register("host run registrations")
def _clean_stale(runs_dir: Path | None = None) -> list[str]:
    """/run/virtbench/runs/PID.lock files no live runner holds (a killed run's)."""
    runs_dir = runs_dir or HOST_RUNS_DIR
    removed = []
    for p in sorted(runs_dir.glob("*.lock")) if runs_dir.is_dir() else []:
        try:
            age = time.time() - p.lstat().st_mtime
        except OSError:
            continue
        if not _held(p) and (not _alive(p.stem) or age > STALE_LOCK_S):
            p.unlink(missing_ok=True)
            removed.append(f"removed {p} (no run holds it)")
    return removed
