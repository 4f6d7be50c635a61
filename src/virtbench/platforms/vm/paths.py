"""Where the VM platform keeps its cached images and per-instance run directories."""

from __future__ import annotations

import os
from pathlib import Path


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
