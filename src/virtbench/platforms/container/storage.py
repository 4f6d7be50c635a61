"""Container root filesystems and data paths: a fresh overlayfs over the shared image per
container (Docker's overlay2 copy-on-write layer) and, for `storage = "volume"`, a host
directory bind-mounted at the data path (Docker's `-v`).

Per-container state lives in STATE_DIR/<instance>/ (bundle config, upper/work layers, merged
root, volume); `clean()` unmounts and removes the directories of dead runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ... import cleanup
from ...errors import PlatformError
from ..base import NAME_PREFIX

STATE_DIR = Path(os.environ.get("VIRTBENCH_CONTAINERS", "/var/lib/virtbench/containers"))
DATA_PATH = "/data"  # the workload's data path inside the container (Platform.workdir)
STORAGE_MODES = ("overlay", "volume")
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str, options: str) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode(), 0, options.encode()) != 0:
        err = ctypes.get_errno()
        raise PlatformError(f"mount -t {fstype} {target} ({options}) failed: {os.strerror(err)}")


def umount(target: str) -> None:
    """Lazy unmount (a process still holding a file must not block teardown)."""
    if _libc.umount2(target.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):  # not mounted / gone: nothing to do
            raise PlatformError(f"umount {target} failed: {os.strerror(err)}")


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below path, deepest first."""
    prefix = str(path).rstrip("/")
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            mnt = line.split()[4].replace("\\040", " ")
            if mnt == prefix or mnt.startswith(prefix + "/"):
                found.append(mnt)
    return sorted(found, key=len, reverse=True)


@dataclass
class Storage:
    """Root filesystem and data path of one container."""

    instance: str
    image: Path  # the shared read-only tree (lower layer)
    mode: str = "overlay"

    @property
    def dir(self) -> Path:
        return STATE_DIR / self.instance

    @property
    def rootfs(self) -> Path:
        return self.dir / "rootfs"

    @property
    def volume(self) -> Path:
        return self.dir / "volume"

    def create(self, mount_root: bool = True) -> None:
        """The state dir, and (mount_root) the overlay root and volume; an engine with its
        own root (docker) keeps only its bundle files here."""
        if self.mode not in STORAGE_MODES:
            raise PlatformError(
                f"unknown storage mode {self.mode!r}; allowed: {', '.join(STORAGE_MODES)}"
            )
        if not mount_root:
            self.dir.mkdir(parents=True, exist_ok=True)
            return
        for sub in ("upper", "work", "rootfs"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        # overlayfs copy-on-write root over the shared image: the image is never written
        _mount(
            "overlay",
            str(self.rootfs),
            "overlay",
            f"lowerdir={self.image},upperdir={self.dir / 'upper'},workdir={self.dir / 'work'}",
        )
        # the data path exists in the upper layer; in volume mode a bind mount covers it
        (self.rootfs / DATA_PATH.lstrip("/")).mkdir(exist_ok=True)
        if self.mode == "volume":
            self.volume.mkdir(exist_ok=True)

    def binds(self) -> list[tuple[str, str]]:
        """(host source, container destination) bind mounts the spec must carry."""
        return [(str(self.volume), DATA_PATH)] if self.mode == "volume" else []

    def host_path(self, container_path: str) -> Path:
        """Where a path inside the container is on the host (for copying files in)."""
        rel = container_path.lstrip("/")
        if self.mode == "volume" and (container_path + "/").startswith(DATA_PATH + "/"):
            return self.volume / os.path.relpath("/" + rel, DATA_PATH)
        return self.rootfs / rel

    def destroy(self) -> None:
        remove_state(self.dir)


def remove_state(d: Path) -> None:
    for mnt in mounts_under(d):
        umount(mnt)
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
    if d.exists():
        raise PlatformError(f"could not remove container state {d}")


@cleanup.register("container storage")
def clean() -> list[str]:
    removed = []
    if STATE_DIR.is_dir():
        for d in sorted(STATE_DIR.iterdir()):
            if d.name.startswith(NAME_PREFIX) and not cleanup.in_use(d.name):
                n = len(mounts_under(d))
                remove_state(d)
                removed.append(f"container state {d} ({n} mounts)")
    return removed
