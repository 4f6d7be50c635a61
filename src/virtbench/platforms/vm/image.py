"""The guest's disks: a raw ext4 base image made from the shared root filesystem tree, cached by
the tree's key and size, and one qcow2 copy-on-write overlay per VM so the base stays pristine
and parallel VMs share it.

Also the boot files (uncompressed kernel, initramfs) and the `vm-image` setup step.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ... import setup_host, tools
from ...errors import VirtbenchError
from ...filelock import file_lock
from . import dockerseed, initramfs, kernel, paths

RECIPE = 2  # bump when the image recipe changes so cached images are rebuilt (2: Docker seed)
GIB = 1 << 30


@dataclass(frozen=True)
class BootFiles:
    kernel: kernel.Kernel
    vmlinux: Path
    initrd: Path
    root: Path  # raw ext4 base image (read-only backing file)
    rootfs_key: str


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess:
    tools.require([argv[0]], needed_by=what)
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise VirtbenchError(f"{what}: {' '.join(argv[:3])} failed: {r.stderr.strip()[-500:]}")
    return r


def make_ext4(tree: Path, target: Path, size_bytes: int) -> None:
    """Write an ext4 filesystem of `size_bytes` holding `tree` (mkfs.ext4 -d, no mounting)."""
    with open(target, "wb") as fh:
        fh.truncate(size_bytes)  # sparse: only the tree's data is written
    _run(
        [
            "mkfs.ext4",
            "-q",
            "-F",
            "-L",
            "vb-root",
            "-E",
            "root_owner=0:0",
            "-d",
            str(tree),
            str(target),
        ],
        "building the VM root image",
    )


def _superblock_ok(path: Path) -> bool:
    """Cheap integrity check: the ext4 superblock reads back as a clean filesystem."""
    r = subprocess.run(["dumpe2fs", "-h", str(path)], capture_output=True, text=True)
    return r.returncode == 0 and "Filesystem state:         clean" in r.stdout


def root_image(tree: Path, rootfs_key: str, size_gb: int, log: Callable[[str], None]) -> Path:
    """The cached base image for this tree and size; built (in ~seconds) when missing or bad."""
    cache = paths.image_dir()
    target = cache / f"root-{rootfs_key}-{size_gb}g-r{RECIPE}.ext4"
    meta = target.with_suffix(".json")
    with file_lock(cache / ".lock"):
        if target.exists():
            try:
                info = json.loads(meta.read_text())
            except (OSError, ValueError):
                info = {}
            if info.get("size") == target.stat().st_size and _superblock_ok(target):
                return target
            log(f"VM root image {target.name} is incomplete or corrupt: rebuilding it")
            target.unlink()
        log(f"building VM root image {target.name} ({size_gb} GiB ext4 from {tree})")
        start = time.monotonic()
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        try:
            # the tree, with Docker's data root holding it as an image for guests' dockerd
            with dockerseed.seeded_tree(tree, rootfs_key, cache, log) as (source, seeded):
                make_ext4(source, tmp, size_gb * GIB)
            tmp.chmod(0o444)  # the base is only ever a read-only backing file
            tmp.rename(target)
        finally:
            tmp.unlink(missing_ok=True)
        meta.write_text(
            json.dumps(
                {
                    "rootfs_key": rootfs_key,
                    "docker_seeded": seeded,
                    "size": target.stat().st_size,
                    "build_seconds": round(time.monotonic() - start, 2),
                }
            )
        )
        for old in cache.glob(f"root-*-{size_gb}g-r*.ext4"):
            if old != target and paths.stale(old):
                old.unlink(missing_ok=True)
                old.with_suffix(".json").unlink(missing_ok=True)
    return target


def boot_kernel(log: Callable[[str], None]) -> tuple[kernel.Kernel, Path, Path]:
    """(kernel, uncompressed vmlinux, guest initramfs), cached by kernel and init recipe."""
    k = kernel.find_kernel()
    cache = paths.image_dir()
    with file_lock(cache / ".lock"):
        vmlinux = kernel.vmlinux(k, cache)
        initrd = initramfs.write_cached(
            cache / f"initramfs-{k.version}-{initramfs.script_digest()}.cpio",
            lambda: initramfs.guest_initramfs(k.modules),
            stale="initramfs-*.cpio",
        )
    return k, vmlinux, initrd


def probe_initrd() -> Path:
    cache = paths.image_dir()
    with file_lock(cache / ".lock"):
        return initramfs.write_cached(
            cache / f"probe-{initramfs.script_digest()}.cpio",
            initramfs.probe_initramfs,
            stale="probe-*.cpio",
        )


def rootfs(log: Callable[[str], None]) -> tuple[Path, str]:
    """The shared debootstrap tree (built by the container platform's image code) and its key."""
    from ...images.rootfs import rootfs_tree

    tree = rootfs_tree(log)
    return tree, tree.parent.name


def boot_files(size_gb: int, log: Callable[[str], None]) -> BootFiles:
    k, vmlinux, initrd = boot_kernel(log)
    tree, key = rootfs(log)
    return BootFiles(k, vmlinux, initrd, root_image(tree, key, size_gb, log), key)


def create_overlay(base: Path, overlay: Path) -> None:
    """A qcow2 overlay whose backing file is the raw base: all guest writes land here."""
    _run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(base), str(overlay)],
        "creating the VM overlay disk",
    )


DEFAULT_ROOT_GB = 4


@setup_host.register("vm-image")
def _setup_step(log: Callable[[str], None]) -> None:
    files = boot_files(DEFAULT_ROOT_GB, log)
    log(f"VM boot files ready: {files.vmlinux.name}, {files.initrd.name}, {files.root.name}")


def create_disk(tree: Path, target: Path, size_gb: int, preallocation: str) -> None:
    """A standalone root disk for a new VM (lifecycle suite): allocate `size_gb` GiB with
    qemu-img's preallocation mode, then fill it with the tree (mkfs.ext4 -d keeps the size)."""
    _run(
        ["qemu-img", "create", "-q", "-f", "raw", "-o", f"preallocation={preallocation}",
         str(target), f"{size_gb}G"],
        "allocating a VM disk",
    )  # fmt: skip
    _run(
        ["mkfs.ext4", "-q", "-F", "-L", "vb-root", "-E", "root_owner=0:0,nodiscard", "-d",
         str(tree), str(target)],
        "filling a VM disk",
    )  # fmt: skip
