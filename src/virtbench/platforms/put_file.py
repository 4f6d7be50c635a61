"""Portable `Platform.put_file`: copy a host file into any environment through its `exec`.

Used by platforms that do not share the host filesystem and have no faster channel. The file
travels as base64 in argv chunks (the kernel caps one argument at 128 KiB), is checked with
sha256sum inside, and is skipped when an identical copy is already there.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PlatformError

if TYPE_CHECKING:
    from .base import Platform

CHUNK = 48 * 1024  # raw bytes per exec: 64 KiB of base64, half the 128 KiB argument cap


def _sh(platform: Platform, script: str, *args: str, timeout: float = 60) -> str:
    r = platform.exec(["sh", "-c", script, "sh", *args], timeout=timeout)
    if not r.ok:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise PlatformError(
            f"{platform.name}: copying a file in failed ({' | '.join(tail) or r.returncode})"
        )
    return r.stdout


def copy_via_exec(
    platform: Platform, host_path: str, dest: str | None = None, mode: int = 0o755
) -> str:
    data = Path(host_path).read_bytes()
    dest = dest or posixpath.join(platform.workdir, Path(host_path).name)
    digest = hashlib.sha256(data).hexdigest()
    have = _sh(platform, 'sha256sum "$1" 2>/dev/null || true', dest).split()
    if have and have[0] == digest:
        return dest
    tmp = dest + ".part"
    _sh(platform, 'mkdir -p "$(dirname "$1")" && : > "$1"', tmp)
    for off in range(0, len(data), CHUNK):
        chunk = base64.b64encode(data[off : off + CHUNK]).decode()
        _sh(platform, 'printf %s "$2" | base64 -d >> "$1"', tmp, chunk)
    _sh(platform, f'chmod {mode:o} "$1" && mv -f "$1" "$2"', tmp, dest)
    got = _sh(platform, 'sha256sum "$1"', dest).split()
    if not got or got[0] != digest:
        raise PlatformError(f"{platform.name}: {dest} differs from {host_path} after copying")
    return dest
