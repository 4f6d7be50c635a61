"""Where build and fetch steps keep what they make: /var/lib/virtbench/<kind> as root, else
~/.cache/virtbench/<kind>; an environment variable overrides either (tests, CI)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def cache_root(kind: str, override_env: str) -> Path:
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/lib/virtbench") / kind
    return Path.home() / ".cache" / "virtbench" / kind


@contextlib.contextmanager
def building(final: Path, complete: Callable[[Path], bool]) -> Iterator[Path]:
    """A fresh directory beside `final` to build into; when the block succeeds it becomes
    `final` in one rename (if another process finished the same build first, `final` is
    kept when `complete(final)`). Removed on any failure, so no half-built cache stays."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp makes it 0700; the cache is readable like any tool dir
    try:
        yield tmp
        try:
            tmp.rename(final)
        except OSError:  # another process finished the same build first
            if not complete(final):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
