"""The guest kernel: Debian's linux-image-amd64 from /boot, uncompressed for PVH direct boot.

QEMU boots an uncompressed ELF vmlinux through its PVH entry point about twice as fast as the
bzImage under TCG (the decompressor is slow when binary-translated), so we extract it once and
cache it by kernel version and file identity.
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

from ...errors import VirtbenchError
from . import paths

BOOT = Path("/boot")
MODULES_ROOT = Path("/lib/modules")
_MAGICS = {b"\xfd7zXZ\x00": "xz", b"\x1f\x8b\x08": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}


@dataclass(frozen=True)
class Kernel:
    version: str
    vmlinuz: Path
    modules: Path  # /lib/modules/<version>

    def identity(self) -> str:
        st = self.vmlinuz.stat()
        return f"{self.version}-{st.st_size}-{int(st.st_mtime)}"


def _version_key(version: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", version)]


def find_kernel(boot: Path = BOOT, modules_root: Path = MODULES_ROOT) -> Kernel:
    """The newest /boot/vmlinuz-* that has its modules installed."""
    found = []
    for path in boot.glob("vmlinuz-*"):
        version = path.name.removeprefix("vmlinuz-")
        if (modules_root / version / "modules.dep").exists():
            found.append(Kernel(version, path, modules_root / version))
    if not found:
        raise VirtbenchError(
            f"no guest kernel: no {boot}/vmlinuz-* with modules in {modules_root}; "
            "install the Debian package: apt-get install linux-image-amd64   "
            "(or run: virtbench setup)"
        )
    return max(found, key=lambda k: _version_key(k.version))


def decompress_bzimage(data: bytes) -> bytes:
    """Find the compressed payload inside a bzImage and return the ELF vmlinux it holds."""
    for magic, kind in _MAGICS.items():
        start = data.find(magic)
        while start != -1:
            try:
                out = _decompress(kind, data[start:])
            except (lzma.LZMAError, zlib.error, OSError, EOFError):
                out = b""
            if out.startswith(b"\x7fELF"):
                return out
            start = data.find(magic, start + 1)
    raise VirtbenchError("cannot find an xz, gzip or zstd compressed ELF kernel in the bzImage")


def _decompress(kind: str, blob: bytes) -> bytes:
    if kind == "xz":
        return lzma.LZMADecompressor().decompress(blob)  # stops at the end of the stream
    if kind == "gzip":
        return zlib.decompressobj(wbits=31).decompress(blob)  # ignores trailing data
    if shutil.which("zstd") is None:
        raise VirtbenchError("the guest kernel is zstd-compressed; apt-get install zstd")
    r = subprocess.run(["zstd", "-dc"], input=blob, capture_output=True)
    return r.stdout  # zstd complains about trailing data but has written the kernel


def vmlinux(kernel: Kernel, cache: Path) -> Path:
    """Path of the uncompressed kernel, extracted once per kernel identity."""
    target = cache / f"vmlinux-{kernel.identity()}"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    elf = decompress_bzimage(kernel.vmlinuz.read_bytes())
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(elf)
    tmp.rename(target)  # atomic: parallel builders never see a half-written kernel
    for old in cache.glob("vmlinux-*"):
        if old != target and ".tmp" not in old.name and paths.stale(old):
            old.unlink(missing_ok=True)
    return target
