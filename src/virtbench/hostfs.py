"""Which mounted filesystem holds a host path: its device, type and source, read from
/proc/self/mountinfo (ground level: the disk ceiling's key, the container platform's check
of where its layers live)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# filesystems that accept O_DIRECT but keep the data in memory
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})


@dataclass(frozen=True)
class Mount:
    device: str  # "major:minor" of the filesystem (st_dev)
    mountpoint: str
    fs_type: str
    source: str  # e.g. /dev/vda1, or "tmpfs"


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")


def existing_ancestor(path: str | Path) -> Path:
    """`path`, or its nearest existing parent (a workdir may not exist before a run)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def mount_of(path: str | Path, mountinfo: str | None = None) -> Mount:
    """The filesystem holding `path` (or its nearest existing parent): the deepest mount
    whose device is the path's own st_dev."""
    p = existing_ancestor(path)
    st = p.stat()
    device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    best: Mount | None = None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 2 or fields[2] != device:
            continue
        mnt = _unescape(fields[4])
        inside = str(p) == mnt or str(p).startswith(mnt.rstrip("/") + "/")
        if inside and (best is None or len(mnt) > len(best.mountpoint)):
            best = Mount(device, mnt, tail[0], _unescape(tail[1]))
    return best or Mount(device, "/", "unknown", "unknown")
