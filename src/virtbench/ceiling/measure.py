"""Measure a device's ceiling: native fio O_DIRECT, libaio at a high queue depth, each
pattern of record.PATTERNS for `runtime_s` seconds, `passes` times (passes interleaved, so
a slow moment of the device spreads over the patterns instead of sinking one)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from .. import hostfs, ownedtmp, tools
from ..diskceiling import PATTERNS, Ceiling, Key
from ..drivers import fio
from ..errors import WorkloadError
from ..naming import NAME_PREFIX
from ..platforms.base import ExecResult
from .cache import CeilingError

IODEPTH = 64  # past what the disk suite's test cases use (16; IOzone's 1): the device's best
PASSES = 3
RUNTIME_S = 2
SIZE_MIB = 256


def key_of(directory: str | Path) -> Key:
    m = hostfs.mount_of(directory)
    return Key(m.device, m.source, m.fs_type, platform.release())


def seconds(passes: int = PASSES, runtime_s: int = RUNTIME_S) -> int:
    """About how long `measure` takes (the file's first write comes on top)."""
    return passes * len(PATTERNS) * runtime_s


def measure(
    directory: str | Path,
    passes: int = PASSES,
    runtime_s: int = RUNTIME_S,
    size_mib: int = SIZE_MIB,
    say: Callable[[str], None] = lambda _m: None,
) -> Ceiling:
    tools.require(["fio"], needed_by="the disk ceiling")
    base = hostfs.existing_ancestor(directory)
    key = key_of(base)
    tmp = Path(ownedtmp.mkdtemp("ceiling", dir=base, hidden=True))
    path = tmp / "fio.dat"
    figures: dict[str, dict[str, list[float]]] = {p: {} for p in PATTERNS}
    try:
        for n in range(passes):
            for pattern in PATTERNS:
                one = _run(pattern, str(path), size_mib, runtime_s, key)
                for metric, value in one.items():
                    figures[pattern].setdefault(metric, []).append(value)
            say(f"  pass {n + 1}/{passes} done")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Ceiling(key, str(base), time.time(), IODEPTH, runtime_s, figures)


def _run(pattern: str, path: str, size_mib: int, runtime_s: int, key: Key) -> dict[str, float]:
    rw, bs = pattern.split()
    job = fio.Job(f"{NAME_PREFIX}ceiling", path, size_mib, rw, bs, "libaio", IODEPTH, runtime_s)
    argv = job.argv(1)
    what = f"disk ceiling {pattern} on {key.source} ({key.fs_type})"
    start = time.monotonic()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=runtime_s * 10 + 120)
    except subprocess.TimeoutExpired as exc:
        raise CeilingError(f"{what}: fio did not finish in {exc.timeout:.0f} s") from exc
    result = ExecResult(argv, r.returncode, r.stdout, r.stderr, time.monotonic() - start)
    if r.returncode != 0 and fio.refused_einval(result):
        raise CeilingError(f"{what}: the filesystem refused O_DIRECT: {fio.tail(result)}")
    if r.returncode != 0:
        raise CeilingError(f"{what}: fio exited {r.returncode}: {fio.tail(result)}")
    try:
        out = fio.parse(result, "read" if "read" in rw else "write", what)
    except WorkloadError as exc:
        raise CeilingError(str(exc)) from exc
    return {m: out[m] for m in ("bandwidth_mib_s", "iops")}
