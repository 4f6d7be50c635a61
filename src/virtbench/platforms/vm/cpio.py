"""A writer for the newc cpio format the kernel unpacks as an initramfs (no cpio tool needed)."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field


@dataclass
class CpioWriter:
    """Collects entries in memory; `bytes()` returns the archive with its trailer."""

    _parts: list[bytes] = field(default_factory=list)
    _ino: int = 1

    def _entry(self, name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)):
        name_b = name.lstrip("/").encode() + b"\0"
        fields = [
            self._ino,
            mode,
            0,  # uid
            0,  # gid
            2 if stat.S_ISDIR(mode) else 1,  # nlink
            0,  # mtime: fixed, so the archive is reproducible
            len(data),
            0,
            0,
            rdev[0],
            rdev[1],
            len(name_b),
            0,  # check (unused by newc)
        ]
        self._ino += 1
        header = b"070701" + b"".join(f"{v:08x}".encode() for v in fields)
        self._parts.append(header + name_b + _pad(len(header) + len(name_b)))
        self._parts.append(data + _pad(len(data)))

    def dir(self, name: str, mode: int = 0o755) -> None:
        self._entry(name, stat.S_IFDIR | mode)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name: str, major: int, minor: int, mode: int = 0o600) -> None:
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def bytes(self) -> bytes:
        trailer = CpioWriter(_ino=0)
        trailer._entry("TRAILER!!!", 0)
        return b"".join(self._parts + trailer._parts)


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)
