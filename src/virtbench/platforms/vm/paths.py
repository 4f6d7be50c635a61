"""Where the VM platform keeps its cached images and per-instance run directories."""

from __future__ import annotations

import os
import time
from pathlib import Path

# An older cached build (other key or init recipe) is pruned only after this long: another
# virtbench process running older code may still use it (a VM about to start opens its base
# image and initramfs by path), and two versions must not delete each other's files.
STALE_AFTER_S = 24 * 3600


def state_dir() -> Path:
    """Root of virtbench's host state (overridable for tests)."""
    return Path(os.environ.get("VIRTBENCH_STATE", "/var/lib/virtbench"))


def image_dir() -> Path:
    """Cached kernel, initramfs and root images, shared by all VMs."""
    return state_dir() / "images" / "vm"


def run_dir() -> Path:
    """One sub-directory per running VM (overlay, sockets, serial log), named by instance."""
    return state_dir() / "vm-run"


def log_dir() -> Path:
    """Serial logs of guests that failed to boot, kept for diagnosis."""
    return state_dir() / "vm-logs"


def stale(path: Path, now: float | None = None) -> bool:
    """True if a superseded cache file is old enough to delete (see STALE_AFTER_S)."""
    try:
        age = (now if now is not None else time.time()) - path.stat().st_mtime
    except OSError:
        return False
    return age > STALE_AFTER_S
