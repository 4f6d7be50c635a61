"""virtbench's own probes (vb-tick, vb-switch; probes/*.c): their JSON result, exit codes, and
the histogram analysis that finds the timer tick's second mode (seed 001 Fig. 6)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import WorkloadError

# exit codes of the probes (probes/vb_probe.h)
EXIT_USAGE = 2
EXIT_NOPERM = 3


def probe_options(policy: str, clock: str, priority: int, allow_unprivileged: bool) -> list[str]:
    """The options every probe takes; a negative `priority` leaves the probe to take the
    policy's highest."""
    argv = ["--policy", policy, "--clock", clock]
    if priority >= 0:
        argv += ["--priority", str(priority)]
    return argv + (["--allow-unprivileged"] if allow_unprivileged else [])


def load_json(text: str, what: str) -> dict[str, Any]:
    """The one JSON object a probe prints (the last line that parses)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise WorkloadError(f"{what}: no JSON result in its output: {text.strip()[-200:]!r}")


@dataclass
class Modes:
    """The main mode of a duration histogram and the delays above it."""

    main_us: float  # the most frequent duration (undisturbed iterations)
    threshold_us: float  # durations above this count as disturbed
    disturbed: int  # iterations longer than threshold
    second_us: float | None  # the most frequent disturbed duration (tick handling), if any
    total: int

    @property
    def delay_us(self) -> float | None:
        return None if self.second_us is None else self.second_us - self.main_us


def modes(bins: list[list[float]], min_gap_us: float = 2.0, window_us: float = 100.0) -> Modes:
    """Find the main mode and the second mode of a histogram of [lo_ns, hi_ns, count] bins.

    Bins are regrouped into 1 µs buckets. The threshold is the main mode plus the larger of
    `min_gap_us` and 3x the main peak's half-width (so normal jitter is not "disturbed").
    The second mode is the fullest 1 µs bucket above the threshold within `window_us`.
    """
    buckets: dict[int, int] = {}
    total = 0
    for lo, hi, count in bins:
        total += int(count)
        if hi - lo <= 1000.0:  # only the fine (linear) bins carry the mode structure
            key = int((lo + hi) / 2 // 1000)
            buckets[key] = buckets.get(key, 0) + int(count)
    if not buckets:
        return Modes(0.0, 0.0, 0, None, total)
    main = max(buckets, key=lambda k: buckets[k])
    peak = buckets[main]
    half = [k for k, c in buckets.items() if c >= peak / 2]
    width = max(half) - min(half) + 1
    threshold = main + 0.5 + max(min_gap_us, 3.0 * width / 2)
    disturbed = sum(int(c) for lo, hi, c in bins if (lo + hi) / 2 / 1000.0 > threshold)
    above = {k: c for k, c in buckets.items() if threshold < k + 0.5 <= main + window_us}
    second = max(above, key=lambda k: above[k]) + 0.5 if above else None
    return Modes(main + 0.5, threshold, disturbed, second, total)


@dataclass
class ProbeResult:
    """The facts every probe run shares: clock, scheduling, warnings, statistics in µs."""

    data: dict[str, Any]
    stats_us: dict[str, float] = field(default_factory=dict)
    labels: dict[str, Any] = field(default_factory=dict)


def parse_probe(stdout: str, what: str) -> ProbeResult:
    data = load_json(stdout, what)
    try:
        stats = {k: float(v) / 1000.0 for k, v in data["stats_ns"].items()}
        clock, sched = data["clock"], data["sched"]
    except (KeyError, TypeError, ValueError) as exc:
        raise WorkloadError(f"{what}: unexpected JSON (missing {exc})") from exc
    labels: dict[str, Any] = {
        "clock": clock["source"],
        "tsc_invariant": bool(clock["cpuid_invariant"] or clock["cpuinfo_invariant"]),
        "policy": sched["policy"],
        "priority": sched["priority"],
        "realtime": bool(sched["rt"]),
        "samples": int(data.get("samples", 0)),
    }
    if clock.get("fallback"):
        labels["clock_fallback"] = clock["fallback"]
    warnings = list(data.get("warnings") or [])
    if not sched["rt"] and not any("not real-time" in w for w in warnings):
        warnings.append("ran without a real-time policy")
    if warnings:
        labels["warning"] = "; ".join(warnings)
    if labels["samples"] == 0:
        labels["invalid"] = "the probe recorded no samples"
    return ProbeResult(data, stats, labels)


def probe_failure(what: str, returncode: int, stderr: str) -> WorkloadError:
    """A clear message for a probe that refused to run."""
    msg = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {returncode}"
    if returncode == EXIT_NOPERM:
        return WorkloadError(
            f"{what}: {msg}. To measure without real-time priority anyway, set "
            "allow_unprivileged = true in [suites.latency] (results get a warning label)"
        )
    return WorkloadError(f"{what}: {msg}")
