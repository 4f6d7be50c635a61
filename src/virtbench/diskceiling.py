"""A measured disk ceiling and the limit it sets (pure: stdlib only, read by analysis).

The limit of a pattern's figure is median x (1 + margin): margin = max(MIN_MARGIN,
SPREAD_FACTOR x (max - min) / median of its passes). The passes' spread widens it, so a
ceiling measured while something else used the disk (a spread of 40% gives +80%) does not
turn honest figures invalid; MIN_MARGIN covers what a short pass cannot show (a device's
own burst credit, a queue depth that suits it better). A cache is several times faster than
a device (docs/code-measurements.md), so the margin never hides one.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

# "<fio rw> <bs>" of the disk suite's test cases (workloads/disk.py io_pattern), writes
# first: the file they leave is what the reads read
PATTERNS = ("write 1M", "read 1M", "randwrite 4k", "randread 4k")
METRICS = ("bandwidth_mib_s", "iops")  # the higher-is-better figures a ceiling bounds
MIN_MARGIN = 0.25
SPREAD_FACTOR = 2.0
MAX_AGE_S = 30 * 24 * 3600  # older: measured again (firmware, fill level, a cloud disk's tier)
FACT = "disk_ceilings"  # host facts key: a list of Ceiling.to_fact()
NOTES = "disk_ceiling_notes"  # host facts key: why a device has no ceiling


@dataclass(frozen=True)
class Key:
    """What a ceiling belongs to: a new device, filesystem or kernel measures anew."""

    device: str  # major:minor
    source: str  # /dev/vda1
    fs_type: str
    kernel: str

    @property
    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Ceiling:
    key: Key
    directory: str  # where fio's file was
    measured_at: float  # epoch seconds
    iodepth: int
    runtime_s: int
    # pattern -> metric -> one figure per pass
    passes: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.measured_at))

    def age_s(self, now: float | None = None) -> float:
        return (now if now is not None else time.time()) - self.measured_at

    def median(self, pattern: str, metric: str) -> float | None:
        values = self.passes.get(pattern, {}).get(metric)
        return statistics.median(values) if values else None

    def margin(self, pattern: str, metric: str) -> float | None:
        values = self.passes.get(pattern, {}).get(metric)
        med = self.median(pattern, metric)
        if not values or not med:
            return None
        return max(MIN_MARGIN, SPREAD_FACTOR * (max(values) - min(values)) / med)

    def limit(self, pattern: str, metric: str) -> float | None:
        """The largest figure this device can give for `pattern`'s `metric`; None: not
        measured."""
        med, margin = self.median(pattern, metric), self.margin(pattern, metric)
        return None if med is None or margin is None else med * (1 + margin)

    def describe(self, pattern: str, metric: str, unit: str) -> str:
        """The ceiling as a reason names it."""
        values = self.passes[pattern][metric]
        return (
            f"host disk ceiling {pattern} {self.median(pattern, metric):.0f} {unit} (median of"
            f" {len(values)} native fio O_DIRECT passes at iodepth {self.iodepth} on"
            f" {self.key.source} {self.key.fs_type}, measured {self.date}; limit"
            f" {self.limit(pattern, metric):.0f} {unit} = +{self.margin(pattern, metric):.0%}"
            " for its spread)"
        )

    def to_fact(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_fact(cls, d: Any) -> Ceiling:
        """From a host fact or a cache file; ValueError if it is not one."""
        try:
            passes = {
                str(p): {str(m): [float(v) for v in vs] for m, vs in ms.items()}
                for p, ms in d["passes"].items()
            }
            return cls(
                Key(**{k: str(d["key"][k]) for k in ("device", "source", "fs_type", "kernel")}),
                str(d["directory"]),
                float(d["measured_at"]),
                int(d["iodepth"]),
                int(d["runtime_s"]),
                passes,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a disk ceiling: {exc!r}") from exc


def from_facts(host: dict[str, Any]) -> list[Ceiling]:
    """The ceilings a run's host facts hold (none for runs stored before them)."""
    out = []
    for d in host.get(FACT) or []:
        try:
            out.append(Ceiling.from_fact(d))
        except ValueError:
            continue  # a damaged fact judges nothing
    return out
