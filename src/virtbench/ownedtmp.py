"""Host temporary files and directories named after the process that owns them.

A private copy of a results store (`vb-store-…`, `vb-import-…`) can weigh hundreds of MB and
is removed on close or at exit, which SIGKILL or a crash skips. So such paths are named
`vb-KIND-PID-START-XXXXXXXX` (START: the owner's start time in /proc/PID/stat, so a reused
PID is not taken for the owner) and `virtbench cleanup` (and the watchdog after a killed
run) removes those whose owner is gone, never one a live process uses: a `virtbench
report` reading a copy beside a campaign keeps it. No lock file or claim is needed, so it
works for a user who cannot write /run/virtbench (a read-only store's reader).

Staging paths beside what they become are hidden the same way (`.vb-KIND-…`): a build's
directory in a cache root (`cachedir`, swept by `cleanup` too) and a report's temporary file.

Ground level (the store uses it): the standard library and `naming` only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

from .naming import NAME_PREFIX

UNKNOWN_START = "0"  # /proc unreadable: the owner is alive while its PID is


def process_start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def prefix(kind: str, hidden: bool = False) -> str:
    """`vb-KIND-PID-START-`: what tempfile puts 8 random characters (and a suffix) after;
    `hidden` starts it with a dot (a staging path beside a cache entry or a report)."""
    me = os.getpid()
    dot = "." if hidden else ""
    return f"{dot}{NAME_PREFIX}{kind}-{me}-{process_start_time(me) or UNKNOWN_START}-"


def tempdir(
    kind: str, dir: str | Path | None = None, hidden: bool = False
) -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=prefix(kind, hidden), dir=dir)


def mkdtemp(kind: str, dir: str | Path | None = None, hidden: bool = False) -> str:
    return tempfile.mkdtemp(prefix=prefix(kind, hidden), dir=dir)


def mkstemp(
    kind: str, suffix: str = "", dir: str | Path | None = None, hidden: bool = False
) -> tuple[int, str]:
    return tempfile.mkstemp(prefix=prefix(kind, hidden), suffix=suffix, dir=dir)


# KIND is lower-case words joined by '-'; the random part is 8 of tempfile's [a-z0-9_] or
# mktemp(1)'s [A-Za-z0-9] (the JMeter client's shell names its directory so)
_OWNED = re.compile(
    r"\.?" + re.escape(NAME_PREFIX) + r"(?P<kind>[a-z]+(?:-[a-z]+)*)-(?P<pid>\d+)-(?P<start>\d+)-"
    r"[A-Za-z0-9_]{8}(?:\.[A-Za-z0-9]+)?"
)


def owner_alive(name: str) -> bool | None:
    """Whether the process that made the path `name` still runs; None if `name` is not
    named by its owner (left to whichever cleaner knows it)."""
    m = _OWNED.fullmatch(name)
    if m is None:
        return None
    now = process_start_time(int(m["pid"]))
    if m["start"] == UNKNOWN_START:
        return now is not None
    return now == m["start"]


def remove_stale(root: Path | None = None, kinds: Collection[str] | None = None) -> list[str]:
    """Remove the owner-named paths in `root` (the temporary directory), hidden or not, whose
    owner is gone, only those of `kinds` when given; a line per path removed."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    for path in sorted([*root.glob(NAME_PREFIX + "*"), *root.glob("." + NAME_PREFIX + "*")]):
        m = _OWNED.fullmatch(path.name)
        if m is None or (kinds is not None and m["kind"] not in kinds):
            continue
        if owner_alive(path.name) is not False:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):  # not ours to remove: reported by not listing it
                path.unlink(missing_ok=True)
        if not path.exists():
            removed.append(f"removed {path} (its process {m['pid']} is gone)")
    return removed
