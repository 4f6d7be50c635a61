"""Cross-process lock on a file: virtbench runs side by side share host state (the network
bridge and its addresses, the image caches, the RT budget) and take turns on it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from . import safefs


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created 0600, with its directory, 0755) for the
    block; a symlink or other non-regular file planted there is refused, never followed."""
    safefs.make_dirs(path.parent, 0o755)
    fd = safefs.open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
