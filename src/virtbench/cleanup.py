"""The cleaner registry and owner claims: what virtbench left behind, by its own records.

Bottom level: a module that makes host objects imports only this to register its cleaner
(`@cleanup.register("what")`) and claim what it makes; `cleanup_all.run_all` (the top-level
runner of `virtbench cleanup` and the watchdog) loads every such module and runs them.

Each platform module registers a cleaner for the host objects it creates; a cleaner returns
a line per object it removed, and a "left alone: X (no virtbench record)" line per object
that only looks like virtbench's. An object in a namespace others share (a netns, link, nft
table, cgroup, QEMU, Docker container) is removed only when an owner claim (below) says a
virtbench process made it and that process is gone: a name starting with `vb-` proves
nothing. Records are believed only when root owns them and no one else can write them
(safefs.trusted), and are written before the object is made, so a SIGKILLed run's leftovers
still have theirs (docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from . import cachedir, ownedtmp, safefs
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


ALIVE, DEAD, NO_RECORD = "alive", "dead", "no record"


def claim(name: str) -> None:
    """Record that this process owns the host object(s) named `name` (before making them)."""
    me = os.getpid()
    safefs.write_state(OWNERS_DIR / name, f"{me} {process_start_time(me)}\n", mode=0o600)


def release(name: str) -> None:
    (OWNERS_DIR / name).unlink(missing_ok=True)


def owner(*names: str) -> str:
    """ALIVE if a trusted claim of any of `names` names a running process, else DEAD if one
    names a process that is gone, else NO_RECORD (no claim, or one not to be believed)."""
    states = set()
    for name in names:
        text = safefs.read_state(OWNERS_DIR / name)
        try:
            pid, start = (text or "").split()
            states.add(ALIVE if process_start_time(int(pid)) == start else DEAD)
        except ValueError:
            continue
    return ALIVE if ALIVE in states else DEAD if DEAD in states else NO_RECORD


def in_use(name: str) -> bool:
    """True if `name` was claimed by a process that is still running."""
    return owner(name) == ALIVE


def left_alone(what: str) -> str:
    return f"left alone: {what} (no virtbench record)"


def drop_dead_claims() -> None:
    """Remove the claims of processes that are gone (after every cleaner has judged by them)."""
    if OWNERS_DIR.is_dir():
        for entry in OWNERS_DIR.iterdir():
            if owner(entry.name) == DEAD:
                entry.unlink(missing_ok=True)


@register("private temporary files")
def _clean_owned_tmp() -> list[str]:
    """vb-KIND-PID-START-* of dead owners in /tmp (a store's private copy, an import's) and
    in root's PRIVATE_TMP (JMeter's client directories, wrk's scripts)."""
    removed = ownedtmp.remove_stale()
    if safefs.PRIVATE_TMP.is_dir() and safefs.trusted_dir(safefs.PRIVATE_TMP):
        removed += ownedtmp.remove_stale(safefs.PRIVATE_TMP)
    return removed


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
