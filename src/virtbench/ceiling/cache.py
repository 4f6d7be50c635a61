"""Ceilings kept per device + filesystem + kernel (record.Key) in a directory only its
owner can read: /var/lib/virtbench/ceiling as root, ~/.cache/virtbench/ceiling otherwise,
VIRTBENCH_CEILING_DIR for tests. Root-safe: the directory must be a real directory owned by
us with no group/other access, a cache file is opened without following symlinks and must be
a regular file, and a new one is written beside it and renamed over it."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from .. import ownedtmp
from ..errors import VirtbenchError
from .record import MAX_AGE_S, Ceiling, Key

ENV = "VIRTBENCH_CEILING_DIR"


class CeilingError(VirtbenchError):
    """No ceiling could be had (unsafe cache directory, fio failed or refused O_DIRECT)."""


def root() -> Path:
    if override := os.environ.get(ENV):
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/lib/virtbench/ceiling")
    return Path.home() / ".cache" / "virtbench" / "ceiling"


def safe_dir(d: Path | None = None) -> Path:
    """The cache directory, made 0700 if absent; refused if it is a symlink, not ours, or
    open to others (another user could plant the ceiling that judges our figures)."""
    d = d or root()
    d.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(d, 0o700)
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode):
        raise CeilingError(f"disk ceiling cache {d} is not a directory (a symlink?); remove it")
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise CeilingError(
            f"disk ceiling cache {d} is owned by uid {st.st_uid} with mode"
            f" {stat.S_IMODE(st.st_mode):o}; it must be yours with mode 700 (chmod 700, or"
            f" remove it), or set {ENV}"
        )
    return d


def path_of(key: Key, d: Path) -> Path:
    return d / f"{key.digest}.json"


def load(key: Key, d: Path | None = None) -> Ceiling | None:
    """The cached ceiling of `key`, or None (absent, unreadable, not a regular file, or of
    another key)."""
    p = path_of(key, safe_dir(d))
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        try:
            ceiling = Ceiling.from_fact(json.load(f))
        except (ValueError, UnicodeDecodeError):
            return None
    return ceiling if ceiling.key == key else None


def fresh(ceiling: Ceiling | None, max_age_s: float = MAX_AGE_S) -> bool:
    return ceiling is not None and 0 <= ceiling.age_s() <= max_age_s


def save(ceiling: Ceiling, d: Path | None = None) -> Path:
    d = safe_dir(d)
    target = path_of(ceiling.key, d)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(target).st_mode):
            raise CeilingError(f"{target} is not a regular file; not replacing it")
    fd, tmp = ownedtmp.mkstemp("ceiling", suffix=".json", dir=d, hidden=True)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(ceiling.to_fact(), f, indent=1, sort_keys=True)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
