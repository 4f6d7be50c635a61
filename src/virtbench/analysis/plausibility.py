"""One plausibility rule for every platform: an O_DIRECT figure that beats the host's own
device beyond its noise is not a disk figure.

O_DIRECT is meant to reach the device. A guest disk served from the host page cache (a VM
whose drive is cached by QEMU), or a sandbox that serves file I/O from its own cache (gVisor's
sentry), returns memory speed while claiming O_DIRECT. The reference is the host's device as
the same run measured it: the native platform's valid samples of the same test (test case,
role, metric and dimension labels such as rw, bs, phase), in any scenario. A sample of another
platform is implausible when it exceeds LIMIT_FACTOR times the larger of the native maximum
and the upper end of the native mean's 95% CI; all samples of that fio run (its other metrics)
are then flagged with the reason and how to get a real figure.

Pure: rows of Store.sample_rows (with sample_id) and the run's description in, the sample
ids to flag and their reasons out. The runner writes them to the store after the run
(runner/validate.py), so the report and the scores read them as any other invalid sample.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..store.description import RunDescription
from .groups import dimension_keys
from .stats import summarize

# beyond the device's own noise (its max and CI) by more than this: a factor, not a
# tolerance, because a cache is several times faster than the device it hides (3-5x seen)
LIMIT_FACTOR = 1.25
DIRECT_LABEL = "direct"  # fio's O_DIRECT flag (1 = O_DIRECT)
NATIVE = "native"


@dataclass(frozen=True)
class Reference:
    """The host device's figure for one test, from the native samples of the run."""

    n: int
    mean: float
    top: float  # the larger of the native maximum and the CI's upper end
    unit: str

    @property
    def limit(self) -> float:
        return LIMIT_FACTOR * self.top


def _labels(row: dict[str, Any]) -> dict[str, Any]:
    labels = row.get("labels")
    return labels if labels is not None else json.loads(row.get("labels_json") or "{}")


def _platform(row: dict[str, Any]) -> dict[str, Any]:
    cell = json.loads(row.get("cell_labels") or "{}")
    return cell.get("platform") or {}


def _direct(labels: dict[str, Any]) -> bool:
    return labels.get(DIRECT_LABEL) in (1, True) and labels.get("direct_honoured") is not False


def references(
    rows: list[dict[str, Any]], dims_of: dict[tuple[str, str, str], set[str]]
) -> dict[tuple, Reference]:
    """test key -> the native reference, for O_DIRECT higher-is-better figures."""
    values: dict[tuple, list[float]] = {}
    units: dict[tuple, str] = {}
    for row in rows:
        labels = _labels(row)
        if not (row["valid"] and row["higher_is_better"] and _direct(labels)):
            continue
        if _platform(row).get("platform_type") != NATIVE:
            continue
        key = _test_key(row, labels, dims_of)
        values.setdefault(key, []).append(float(row["value"]))
        units[key] = row["unit"]
    out = {}
    for key, vs in values.items():
        s = summarize(vs)
        high = s.ci_high if s.ci_high is not None else max(vs)
        out[key] = Reference(len(vs), s.mean or 0.0, max(max(vs), high), units[key])
    return out


def _test_key(row: dict[str, Any], labels: dict[str, Any], dims_of) -> tuple:
    tkey = (row["test_case"], row["role"], row["metric"])
    dims = tuple(sorted((k, json.dumps(labels.get(k), default=str)) for k in dims_of[tkey]))
    return (*tkey, dims)


def _run_key(row: dict[str, Any], labels: dict[str, Any]) -> tuple[str, str]:
    """One fio run: its cell and its labels (every metric of a run carries the same)."""
    rest = {k: v for k, v in labels.items() if k != "invalid"}
    return row["cell_id"], json.dumps(rest, sort_keys=True, default=str)


def how_to_fix(platform: dict[str, Any], labels: dict[str, Any]) -> str:
    """How to get a real device figure on this platform (from its recorded labels)."""
    if platform.get("runtime") == "runsc":
        return (
            "gVisor (runsc) serves file I/O from its sentry's page cache, O_DIRECT or not (this"
            " run: runsc defaults, --file-access=exclusive for the root, shared for mounts,"
            f" storage={platform.get('storage', 'overlay')}); for a device figure use a volume"
            ' (storage = "volume") with runsc --file-access-mounts=shared --overlay2=none and'
            " check again, or measure the device on native"
        )
    if platform.get("platform_type") == "vm" or platform.get("host_platform_type") == "vm":
        vm = platform.get("stacked_on") or "this VM"
        cache = platform.get("disk_cache", "not recorded")
        return (
            f"the guest disk of {vm} is served from the host page cache (disk_cache={cache});"
            ' set disk_cache = "none" or "directsync" so guest O_DIRECT reaches the host'
            " device, and keep the guest image on a device-backed filesystem"
        )
    return (
        f"the workdir's filesystem ({labels.get('fs_type', 'unknown')}) served it from memory;"
        " point the workdir at a device-backed filesystem"
    )


def _reason(row: dict[str, Any], ref: Reference, hint: str) -> str:
    u = ref.unit
    return (
        f"implausible O_DIRECT figure: {row['metric']} {float(row['value']):.0f} {u} beats the"
        f" host's own device (native {ref.mean:.0f} {u}, n={ref.n}; limit {ref.limit:.0f} {u}"
        f" = {LIMIT_FACTOR}x its max/CI upper end): served from a cache, not a disk figure;"
        f" {hint}"
    )


def implausible(rows: Iterable[dict[str, Any]], description: RunDescription) -> dict[int, str]:
    """sample_id -> reason, for every still-valid sample of a fio run that beat the device."""
    rows = list(rows)
    dims_of = dimension_keys(rows, description)
    refs = references(rows, dims_of)
    flagged_runs: dict[tuple[str, str], str] = {}
    for row in rows:
        labels = _labels(row)
        platform = _platform(row)
        if not (row["valid"] and row["higher_is_better"] and _direct(labels)):
            continue
        if platform.get("platform_type") == NATIVE:
            continue
        ref = refs.get(_test_key(row, labels, dims_of))
        if ref is None or float(row["value"]) <= ref.limit:
            continue
        run = _run_key(row, labels)
        flagged_runs.setdefault(run, _reason(row, ref, how_to_fix(platform, labels)))
    return {
        int(row["sample_id"]): flagged_runs[key]
        for row in rows
        if row["valid"] and (key := _run_key(row, _labels(row))) in flagged_runs
    }


def unchecked(rows: Iterable[dict[str, Any]], description: RunDescription) -> list[str]:
    """Test cases with O_DIRECT figures off native that no native figure could check."""
    rows = list(rows)
    dims_of = dimension_keys(rows, description)
    refs = references(rows, dims_of)
    out = []
    for row in rows:
        labels = _labels(row)
        if not (row["higher_is_better"] and _direct(labels)):
            continue
        if _platform(row).get("platform_type") == NATIVE:
            continue
        if _test_key(row, labels, dims_of) not in refs and row["test_case"] not in out:
            out.append(row["test_case"])
    return out
