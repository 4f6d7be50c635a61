"""Which O_DIRECT figures cannot be disk figures, for every platform (native too).

O_DIRECT is meant to reach the device. A guest disk served from the host page cache, or a
sandbox that serves file I/O from a cache (gVisor), returns memory speed while claiming
O_DIRECT. Three rules, in order, each flagging every sample of that fio run (its other
metrics too) with the reason:

1. **Mechanism**: a sample labelled `direct_io = "cached:<why>"` (its platform said so:
   `Platform.direct_io()`, directio.py) is invalid whatever its figure.
2. **The host's device ceiling** (ceiling/, kept in the run's host facts): a bandwidth or
   IOPS figure above the ceiling's limit for its `io_pattern` (the median of the native fio
   passes plus a margin for their spread: diskceiling.py) is invalid; with several
   devices, above the fastest one's. The reason names the ceiling and its date.
3. **Fallback** where the run has no ceiling for the pattern (a run stored before ceilings,
   a filesystem that refused the measurement): the native platform's valid samples of the
   same test in this run; a figure of another platform above LIMIT_FACTOR x their maximum
   is invalid. The maximum, not a CI's upper end: with n = 2 that end is meaningless
   (1,399 +- 4,458 MiB/s was seen).

Pure: rows of Store.sample_rows (with sample_id), the run's description and its ceilings
in, the sample ids to flag and their reasons out. The runner writes them to the store after
the run (runner/validate.py), so the report and the scores read them as any other invalid
sample. No rule asks which kind of platform a sample came from: the reference is the platform
the run stored as reaching the host device (analysis/platform_facts.py), the rest are labels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import directio, labelkeys
from ..diskceiling import METRICS, Ceiling, from_facts
from ..store.description import RunDescription
from . import platform_facts
from .groups import dimension_keys

# fallback rule: beyond native's largest figure by more than this: a factor, not a
# tolerance, because a cache is several times faster than the device it hides (seen:
# docs/code-measurements.md)
LIMIT_FACTOR = 1.25
# which rows' platforms reach the host's device directly (analysis/platform_facts.py)
OnDevice = Callable[[dict[str, Any]], bool]
# platform labels that say how its storage reaches the device, quoted when none explains
STORAGE_LABELS = ("runtime", "storage", "disk_cache", "stacked_on")


@dataclass(frozen=True)
class Reference:
    """The host device's figure for one test, from the native samples of the run."""

    n: int
    mean: float
    top: float  # the native maximum
    unit: str

    @property
    def limit(self) -> float:
        return LIMIT_FACTOR * self.top


def ceilings(host: dict[str, Any]) -> list[Ceiling]:
    """The disk ceilings a run's host facts hold (none before ceilings were measured)."""
    return from_facts(host)


def _labels(row: dict[str, Any]) -> dict[str, Any]:
    labels = row.get("labels")
    return labels if labels is not None else json.loads(row.get("labels_json") or "{}")


def _platform(row: dict[str, Any]) -> dict[str, Any]:
    cell = json.loads(row.get("cell_labels") or "{}")
    return cell.get("platform") or {}


def _direct(labels: dict[str, Any]) -> bool:
    return directio.is_direct(labels) and labels.get(labelkeys.DIRECT_HONOURED) is not False


def _judged(row: dict[str, Any], labels: dict[str, Any]) -> bool:
    """A still-valid O_DIRECT figure that a limit can bound."""
    return bool(row["valid"] and row["higher_is_better"] and _direct(labels))


def references(
    rows: list[dict[str, Any]],
    dims_of: dict[tuple[str, str, str], set[str]],
    on_device: OnDevice | None = None,
) -> dict[tuple, Reference]:
    """test key -> the native reference, for O_DIRECT higher-is-better figures."""
    on_device = on_device or platform_facts.host_device({})
    values: dict[tuple, list[float]] = {}
    units: dict[tuple, str] = {}
    for row in rows:
        labels = _labels(row)
        if not _judged(row, labels) or not on_device(row):
            continue
        key = _test_key(row, labels, dims_of)
        values.setdefault(key, []).append(float(row["value"]))
        units[key] = row["unit"]
    return {
        key: Reference(len(vs), sum(vs) / len(vs), max(vs), units[key])
        for key, vs in values.items()
    }


def _test_key(row: dict[str, Any], labels: dict[str, Any], dims_of) -> tuple:
    tkey = (row["test_case"], row["role"], row["metric"])
    dims = tuple(sorted((k, json.dumps(labels.get(k), default=str)) for k in dims_of[tkey]))
    return (*tkey, dims)


def _run_key(row: dict[str, Any], labels: dict[str, Any]) -> tuple[str, str]:
    """One fio run: its cell and its labels (every metric of a run carries the same)."""
    rest = {k: v for k, v in labels.items() if k != "invalid"}
    return row["cell_id"], json.dumps(rest, sort_keys=True, default=str)


def ceiling_for(ceilings: Iterable[Ceiling], labels: dict[str, Any], metric: str) -> Ceiling | None:
    """The ceiling bounding this figure: of the run's devices, the one with the highest
    limit for its pattern (a figure above the fastest device came from none of them)."""
    pattern = labels.get(labelkeys.IO_PATTERN)
    if metric not in METRICS or not isinstance(pattern, str):
        return None
    known = [c for c in ceilings if c.limit(pattern, metric) is not None]
    return max(known, key=lambda c: c.limit(pattern, metric) or 0.0, default=None)


def hint(platform: dict[str, Any], labels: dict[str, Any]) -> str:
    """Where to look, from what the platform recorded (no platform kind is assumed)."""
    said = [f"{k}={platform[k]}" for k in STORAGE_LABELS if platform.get(k) is not None]
    said.append(f"workdir fs={labels.get(labelkeys.FS_TYPE, 'unknown')}")
    return (
        f"this platform ({', '.join(said)}) did not say it caches O_DIRECT: find the cache"
        " between its workdir and the host device (a VM disk_cache other than none or"
        " directsync, a sandbox's file cache, a filesystem in memory)"
    )


def _above_ceiling(row: dict[str, Any], ceiling: Ceiling, labels: dict[str, Any]) -> str:
    u, metric = row["unit"], row["metric"]
    return (
        f"implausible O_DIRECT figure: {metric} {float(row['value']):.0f} {u} is above the"
        f" {ceiling.describe(labels[labelkeys.IO_PATTERN], metric, u)}: served from a cache, not a"
        " disk figure"
    )


def _above_native(row: dict[str, Any], ref: Reference) -> str:
    u = ref.unit
    return (
        f"implausible O_DIRECT figure: {row['metric']} {float(row['value']):.0f} {u} beats the"
        f" host's own device as this run measured it (no disk ceiling in the run's host facts;"
        f" native {ref.mean:.0f} {u}, n={ref.n}; limit {ref.limit:.0f} {u} = {LIMIT_FACTOR}x"
        " its largest figure): served from a cache, not a disk figure"
    )


def verdict(
    row: dict[str, Any],
    labels: dict[str, Any],
    ceilings: list[Ceiling],
    refs: dict[tuple, Reference],
    dims_of,
    on_device: OnDevice | None = None,
) -> str | None:
    """Why this still-valid sample is not a disk figure, or None."""
    on_device = on_device or platform_facts.host_device({})
    if not (row["valid"] and directio.is_direct(labels)):
        return None
    if mechanism := directio.invalid_reason(labels):
        return mechanism
    if not _judged(row, labels):
        return None
    value, platform = float(row["value"]), _platform(row)
    if ceiling := ceiling_for(ceilings, labels, row["metric"]):
        limit = ceiling.limit(labels[labelkeys.IO_PATTERN], row["metric"]) or 0.0
        if value <= limit:
            return None
        return f"{_above_ceiling(row, ceiling, labels)}; {hint(platform, labels)}"
    if on_device(row):
        return None  # native is the fallback's reference, not its subject
    ref = refs.get(_test_key(row, labels, dims_of))
    if ref is None or value <= ref.limit:
        return None
    return f"{_above_native(row, ref)}; {hint(platform, labels)}"


def implausible(
    rows: Iterable[dict[str, Any]],
    description: RunDescription,
    ceilings: Iterable[Ceiling] = (),
    on_device: OnDevice | None = None,
) -> dict[int, str]:
    """sample_id -> reason, for every still-valid sample of a fio run that is not a disk
    figure (by mechanism, above the ceiling, or above native where no ceiling is known).
    `on_device`: which rows' platforms reach the host's device directly (native), from the
    run's host facts (analysis/platform_facts.host_device)."""
    rows, ceilings = list(rows), list(ceilings)
    dims_of = dimension_keys(rows, description)
    refs = references(rows, dims_of, on_device)
    flagged_runs: dict[tuple[str, str], str] = {}
    for row in rows:
        labels = _labels(row)
        if reason := verdict(row, labels, ceilings, refs, dims_of, on_device):
            flagged_runs.setdefault(_run_key(row, labels), reason)
    return {
        int(row["sample_id"]): flagged_runs[key]
        for row in rows
        if row["valid"] and (key := _run_key(row, _labels(row))) in flagged_runs
    }


def unchecked(
    rows: Iterable[dict[str, Any]],
    description: RunDescription,
    ceilings: Iterable[Ceiling] = (),
    on_device: OnDevice | None = None,
) -> list[str]:
    """Test cases with O_DIRECT figures off native that neither a ceiling nor a native
    figure could check."""
    on_device = on_device or platform_facts.host_device({})
    rows, ceilings = list(rows), list(ceilings)
    dims_of = dimension_keys(rows, description)
    refs = references(rows, dims_of, on_device)
    out = []
    for row in rows:
        labels = _labels(row)
        if not (row["higher_is_better"] and _direct(labels)):
            continue
        if on_device(row):
            continue
        if ceiling_for(ceilings, labels, row["metric"]) is not None:
            continue
        if _test_key(row, labels, dims_of) not in refs and row["test_case"] not in out:
            out.append(row["test_case"])
    return out
