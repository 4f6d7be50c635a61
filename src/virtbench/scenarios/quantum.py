"""The scheduler's time slice ("quantum"), set for the duration of a scenario and restored.

Linux's counterpart of Xen credit's 30 ms / 1 ms quantum (seed 001 scenario 3). Knobs, in
the order `auto` tries them:

  base_slice       EEVDF base slice (kernel >= 6.6): debugfs sched/base_slice_ns
  min_granularity  CFS minimum granularity (older kernels): /proc/sys/kernel/
                   sched_min_granularity_ns, or debugfs sched/min_granularity_ns
  rr_timeslice     SCHED_RR round-robin slice: /proc/sys/kernel/sched_rr_timeslice_ms. It only
                   affects SCHED_RR tasks, so with it the target and its antagonists compete
                   as SCHED_RR at one priority (`policy_hint` = "rr"); rounded up to whole
                   timer ticks by the kernel.

If debugfs is not mounted it is mounted at /run/virtbench/vb-debugfs for the change and
unmounted afterwards. The old value is saved in /run/virtbench/vb-quantum.json before the
change, so `virtbench cleanup` restores it after a crash.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import cleanup, safefs
from ..errors import VirtbenchError
from ..parsing import DURATION_NS

STATE_DIR = Path("/run/virtbench")
STATE_FILE = STATE_DIR / "vb-quantum.json"
DEBUGFS_MNT = STATE_DIR / "vb-debugfs"
OWNER = "vb-quantum"  # cleanup.claim name: `virtbench cleanup` spares a live run's setting
KNOBS = ("auto", "base_slice", "min_granularity", "rr_timeslice")


@dataclass
class QuantumSetting:
    knob: str
    path: str
    old: str
    new: str
    unit: str  # of the file's value: "ns" or "ms"
    policy_hint: str | None  # "rr" if only SCHED_RR tasks feel this knob
    debugfs_mounted: str | None = None

    def labels(self) -> dict[str, object]:
        return {
            "quantum_knob": self.knob,
            "quantum_path": self.path,
            "quantum_old": f"{self.old} {self.unit}",
            "quantum_new": f"{self.new} {self.unit}",
        }


def _debugfs(mounted: list[str]) -> Path | None:
    std = Path("/sys/kernel/debug")
    if (std / "sched").is_dir():
        return std
    if (DEBUGFS_MNT / "sched").is_dir():
        return DEBUGFS_MNT
    DEBUGFS_MNT.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "debugfs", "debugfs", str(DEBUGFS_MNT)], capture_output=True, text=True
    )
    if r.returncode != 0:
        with contextlib.suppress(OSError):
            DEBUGFS_MNT.rmdir()
        return None
    mounted.append(str(DEBUGFS_MNT))
    return DEBUGFS_MNT


def _candidates(knob: str, mounted: list[str]) -> Iterator[tuple[str, Path, str, str | None]]:
    if knob in ("auto", "base_slice", "min_granularity"):
        dbg = _debugfs(mounted)
        if knob in ("auto", "base_slice") and dbg:
            yield "base_slice", dbg / "sched" / "base_slice_ns", "ns", None
        if knob in ("auto", "min_granularity"):
            yield "min_granularity", Path("/proc/sys/kernel/sched_min_granularity_ns"), "ns", None
            if dbg:
                yield "min_granularity", dbg / "sched" / "min_granularity_ns", "ns", None
    if knob in ("auto", "rr_timeslice"):
        yield "rr_timeslice", Path("/proc/sys/kernel/sched_rr_timeslice_ms"), "ms", "rr"


def _unmount(path: str) -> None:
    subprocess.run(["umount", path], capture_output=True)
    with contextlib.suppress(OSError):
        Path(path).rmdir()


@contextlib.contextmanager
def quantum(ns: int, knob: str = "auto") -> Iterator[QuantumSetting]:
    """Set the first usable knob to `ns` (in its unit), yield what was done, restore it."""
    if knob not in KNOBS:
        raise ValueError(f"unknown quantum knob '{knob}'; allowed: {', '.join(KNOBS)}")
    if STATE_FILE.exists():
        if cleanup.in_use(OWNER):
            raise VirtbenchError(
                f"another virtbench run is holding the scheduler quantum ({STATE_FILE}); "
                "run quantum scenarios one at a time"
            )
        _cleanup()  # a crashed run's change: restore it before saving "old" again
    mounted: list[str] = []
    tried: list[str] = []
    setting: QuantumSetting | None = None
    cleanup.claim(OWNER)
    try:
        for name, path, unit, hint in _candidates(knob, mounted):
            try:
                old = path.read_text().strip()
            except OSError as exc:
                tried.append(f"{path}: {exc.strerror or exc}")
                continue
            value = str(max(1, round(ns / DURATION_NS[unit])))
            setting = QuantumSetting(
                name, str(path), old, value, unit, hint, mounted[0] if mounted else None
            )
            # before the change: crash-safe; root-only (cleanup writes back what it says)
            safefs.write_state(STATE_FILE, json.dumps(asdict(setting)))
            try:
                path.write_text(value)
            except OSError as exc:
                tried.append(f"{path}: {exc.strerror or exc}")
                STATE_FILE.unlink(missing_ok=True)
                setting = None
                continue
            break
        if setting is None:
            raise VirtbenchError(
                f"no scheduler quantum knob could be set (knob={knob}; tried: "
                + ("; ".join(tried) or "none present")
                + "); needs root, and debugfs or the sysctl"
            )
        yield setting
    finally:
        if setting is not None:
            _restore(setting)
        for m in mounted:
            _unmount(m)
        cleanup.release(OWNER)


def _restore(s: QuantumSetting) -> None:
    try:
        Path(s.path).write_text(s.old)
    except OSError as exc:
        raise VirtbenchError(f"could not restore {s.path} to {s.old}: {exc}") from exc
    STATE_FILE.unlink(missing_ok=True)


def _known_knob(path: str) -> bool:
    """The files `_candidates` offers: a record naming any other is not written back."""
    roots = "|".join(re.escape(str(r)) for r in (Path("/sys/kernel/debug"), DEBUGFS_MNT))
    pattern = rf"/proc/sys/kernel/sched_[a-z_]+|(?:{roots})/sched/[a-z_]+"
    return re.fullmatch(pattern, path) is not None


@cleanup.register("scheduler quantum")
def _cleanup() -> list[str]:
    removed: list[str] = []
    if cleanup.in_use(OWNER):
        return removed
    text = safefs.read_state(STATE_FILE)
    if text is None and STATE_FILE.exists():
        removed.append(cleanup.left_alone(f"{STATE_FILE} (not root's, or writable by others)"))
    elif text is not None:
        saved = json.loads(text)
        path = Path(saved["path"])
        if not _known_knob(str(path)):
            return [f"could not restore {path}: not a scheduler knob virtbench sets"]
        if saved.get("debugfs_mounted") and not path.exists():
            _debugfs([])  # remount to reach the file
        path.write_text(saved["old"])
        STATE_FILE.unlink()
        cleanup.release(OWNER)  # the owner died: drop its stale claim
        removed.append(f"restored {path} = {saved['old']}")
    if DEBUGFS_MNT.exists():
        _unmount(str(DEBUGFS_MNT))
        removed.append(f"unmounted {DEBUGFS_MNT}")
    return removed
