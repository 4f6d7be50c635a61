"""Host state virtbench keeps between runs (the disk ceiling, A/A floors): JSON files in a
directory only its owner can use, /var/lib/virtbench/KIND as root, ~/.cache/virtbench/KIND
otherwise, $VIRTBENCH_STATE_DIR/KIND for tests. Root-safe: the directory must be a real one,
ours, with no group/other access; a file is read without following symlinks and must be
regular; a new one is written beside it and renamed over it."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from . import ownedtmp
from .errors import VirtbenchError

ENV = "VIRTBENCH_STATE_DIR"


class StateError(VirtbenchError):
    """A state directory or file that cannot be trusted or written."""


def root(kind: str) -> Path:
    if override := os.environ.get(ENV):
        return Path(override) / kind
    if os.geteuid() == 0:
        return Path("/var/lib/virtbench") / kind
    return Path.home() / ".cache" / "virtbench" / kind


def safe_dir(d: Path, what: str, env: str = ENV) -> Path:
    """`d`, made 0700 if absent; refused if it is a symlink, not ours, or open to others
    (another user could plant the state that judges our figures)."""
    d.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(d, 0o700)
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(f"{what} {d} is not a directory (a symlink?); remove it")
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise StateError(
            f"{what} {d} is owned by uid {st.st_uid} with mode"
            f" {stat.S_IMODE(st.st_mode):o}; it must be yours with mode 700 (chmod 700, or"
            f" remove it), or set {env}"
        )
    return d


def read_json(path: Path) -> Any | None:
    """The JSON in `path`, or None (absent, unreadable, not a regular file, not JSON)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        try:
            return json.load(f)
        except (ValueError, UnicodeDecodeError):
            return None


def write_json(path: Path, obj: Any, kind: str) -> Path:
    """Write `obj` to `path` (in a safe_dir) through a temporary file renamed over it."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise StateError(f"{path} is not a regular file; not replacing it")
    fd, tmp = ownedtmp.mkstemp(kind, suffix=".json", dir=path.parent, hidden=True)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
