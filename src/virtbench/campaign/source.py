"""Read a campaign file's text, refusing what is not a small UTF-8 text file before it can
hang the loader (a FIFO, a device), fill the results store (a 50 MB file is stored whole with
every run) or end in a traceback (Latin-1 bytes)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import CampaignError

MAX_BYTES = 1 << 20  # the built-in campaigns are a few KiB
MAX_LINE = 10_000  # tomllib's memory grows with the square of a dotted key's depth

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def read(path: Path) -> str:
    file = str(path)
    try:
        # O_NONBLOCK: opening a FIFO without a writer returns at once, so fstat can refuse it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise CampaignError(file, "(file)", f"cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise CampaignError(file, "(file)", f"is {kind}, not a regular file")
        data = _read_at_most(fd, MAX_BYTES + 1) if st.st_size <= MAX_BYTES else b""
    except OSError as exc:
        raise CampaignError(file, "(file)", f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    size = max(len(data), st.st_size)
    if size > MAX_BYTES:
        raise CampaignError(
            file, "(file)", f"is {size} bytes, larger than the {MAX_BYTES} bytes (1 MiB) allowed"
        )
    return decode(data, file)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def decode(data: bytes, file: str) -> str:
    """UTF-8 text (a BOM is dropped) with no line longer than MAX_LINE."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CampaignError(
            file,
            "(encoding)",
            f"is not UTF-8: byte 0x{data[exc.start]:02x} on line {line}; "
            "save the file as UTF-8 (TOML files are UTF-8)",
        ) from None
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE:
            raise CampaignError(
                file, "(file)", f"line {number} is longer than {MAX_LINE} characters"
            )
    return text
