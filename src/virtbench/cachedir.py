"""Where build and fetch steps keep what they make: /var/lib/virtbench/<kind> as root, else
~/.cache/virtbench/<kind>; an environment variable overrides either (tests, CI).

A build stages in `.vb-build-PID-START-XXXXXXXX` beside its entry (`ownedtmp`), so the
directory a SIGKILL or a crash leaves is removed by `virtbench cleanup` (and the watchdog),
and a concurrent build in another process, whose owner is alive, is not."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from . import ownedtmp

# every cache's kind and the variable that moves its root: `remove_stale` sweeps each root
KINDS = {
    "appstack": "VIRTBENCH_APPSTACK_DIR",
    "gvisor": "VIRTBENCH_GVISOR_DIR",  # runsc built from gVisor's Go module
    "java": "VIRTBENCH_JAVA_DIR",
    "probes": "VIRTBENCH_PROBES_DIR",
    "wasm": "VIRTBENCH_WASM_DIR",
    "wheelhouse": "VIRTBENCH_WHEELHOUSE_DIR",  # fleet/wheelhouse.py
}
STAGING = ("build", "fetch")  # the ownedtmp kinds staged inside a cache root


def cache_root(kind: str) -> Path:
    override = os.environ.get(KINDS[kind])
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
    tmp = Path(ownedtmp.mkdtemp("build", dir=final.parent, hidden=True))
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


def remove_stale() -> list[str]:
    """Staging directories in the cache roots whose process is gone (cleanup's rule). The
    roots are this process's (user, variables): the watchdog inherits the run's."""
    removed = []
    for kind in sorted(KINDS):
        removed.extend(ownedtmp.remove_stale(cache_root(kind), kinds=STAGING))
    return removed
