"""Find and remove what virtbench left behind after a crash, by its own naming (NAME_PREFIX).

Each platform module registers a cleaner for the host objects it creates; a cleaner returns
a line per object it removed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from . import cachedir, ownedtmp
from .ownedtmp import process_start_time as process_start_time  # its home is ground level

CLEANERS: list[tuple[str, Callable[[], list[str]]]] = []


def register(what: str):
    def deco(fn: Callable[[], list[str]]) -> Callable[[], list[str]]:
        CLEANERS.append((what, fn))
        return fn

    return deco


# Owner claims: /run/virtbench/owners/<name> holds the PID (and its start time) of the
# virtbench process using a host object, so `cleanup` spares objects of runs still alive
# (several runs may share a host) and removes those whose owner died.
OWNERS_DIR = Path("/run/virtbench/owners")


def claim(name: str) -> None:
    """Record that this process owns the host object(s) named `name`."""
    OWNERS_DIR.mkdir(parents=True, exist_ok=True)
    (OWNERS_DIR / name).write_text(f"{os.getpid()} {process_start_time(os.getpid())}\n")


def release(name: str) -> None:
    (OWNERS_DIR / name).unlink(missing_ok=True)


def in_use(name: str) -> bool:
    """True if `name` was claimed by a process that is still running."""
    try:
        pid, start = (OWNERS_DIR / name).read_text().split()
    except (OSError, ValueError):
        return False
    return process_start_time(int(pid)) == start


@register("private temporary files")
def _clean_owned_tmp() -> list[str]:
    """/tmp/vb-KIND-PID-START-* (a store's private copy, an import's, ...) of dead owners."""
    return ownedtmp.remove_stale()


@register("cache staging directories")
def _clean_cache_staging() -> list[str]:
    """.vb-build-/.vb-fetch-PID-START-* in the build caches (cachedir) of dead owners."""
    return cachedir.remove_stale()


# --- what a cleaner ended: listed, so a user sees the load that was left running ----------
def command_of(pid: int) -> str | None:
    """The process's command line (its name for kernel threads), None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        cmd = raw.replace(b"\0", b" ").decode(errors="replace").strip()
        return cmd or Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def processes_in_cgroup(name: str) -> dict[int, str]:
    """pid -> command of every process whose cgroup path has a component `name` (a
    container's or environment's cgroup, wherever the runtime put it)."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            lines = (entry / "cgroup").read_text().splitlines()
        except OSError:
            continue
        if any(name in line.split(":", 2)[-1].split("/") for line in lines):
            cmd = command_of(int(entry.name))
            if cmd is not None and int(entry.name) != os.getpid():
                found[int(entry.name)] = cmd
    return found


def processes_in_group(pgid: int) -> dict[int, str]:
    """pid -> command of every live process in process group `pgid`."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            cmd = command_of(int(entry.name))
            if int(fields[2]) == pgid and fields[0] not in "ZX" and cmd is not None:
                found[int(entry.name)] = cmd
    return found


def ended(before: dict[int, str], where: str) -> list[str]:
    """A line per process of `before` (pid -> command, taken before killing) now gone."""
    lines = []
    for pid, cmd in sorted(before.items()):
        if command_of(pid) is None or process_state(pid) in ("Z", "X"):
            short = cmd if len(cmd) <= 120 else cmd[:117] + "..."
            lines.append(f"ended process {pid} ({short}) of {where}")
    return lines


def process_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def run_all() -> list[str]:
    from .platforms import registry

    registry.load_all()  # platform modules register their cleaners on import
    from .scenarios import registry as scenarios

    scenarios.load_all()  # so do scenario helpers that change host settings (quantum)
    from . import tune  # noqa: F401 - `virtbench tune` registers its restorer

    removed: list[str] = []
    for what, fn in CLEANERS:
        try:
            removed.extend(fn())
        except Exception as exc:  # noqa: BLE001 - one cleaner failing must not stop the others
            removed.append(f"! {what}: {exc}")
    return removed
