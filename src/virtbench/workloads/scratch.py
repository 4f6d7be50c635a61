"""What multi-step workloads share: one deadline for their several commands, and a scratch
directory under the platform's workdir (made, read from, removed through `exec`)."""

from __future__ import annotations

import secrets
import time

from ..naming import NAME_PREFIX
from ..platforms.base import Platform, check


class Deadline:
    """The cell timeout shared by the several commands of one multi-step workload."""

    def __init__(self, timeout: float | None) -> None:
        self.end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        return None if self.end is None else max(1.0, self.end - time.monotonic())


def scratch_dir(platform: Platform, what: str) -> str:
    """A fresh vb- directory under the platform's workdir (removed by the caller)."""
    path = f"{platform.workdir.rstrip('/')}/{NAME_PREFIX}{what}-{secrets.token_hex(3)}"
    check(platform.exec(["mkdir", "-p", path], timeout=30), f"mkdir {path}")
    return path


def read_file(platform: Platform, path: str, what: str) -> str:
    result = platform.exec(["cat", path], timeout=30)
    check(result, f"{what}: reading {path}")
    return result.stdout


def remove(platform: Platform, path: str, timeout: float = 60) -> None:
    # best effort: a failure here must not hide the measurement or the original error
    platform.exec(["rm", "-rf", "--", path], timeout=timeout)
