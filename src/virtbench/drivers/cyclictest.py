"""cyclictest (rt-tests): its --json file and the histogram ranks its percentiles come from."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .. import labelkeys
from ..errors import WorkloadError


def argv(
    json_path: str,
    priority: int,
    policy: str,
    interval_us: int,
    duration: float,
    histogram_us: float,
) -> list[str]:
    """One SCHED_`policy` thread, memory locked, its result written to `json_path`."""
    return [
        "cyclictest",
        "--mlockall",
        "--quiet",
        "--threads=1",
        f"--priority={priority}",
        f"--policy={policy}",
        f"--interval={interval_us}",
        f"--duration={int(duration)}",
        f"--histogram={int(histogram_us)}",
        f"--json={json_path}",
    ]


@dataclass
class CyclictestResult:
    threads: list[dict[str, Any]]
    histogram: dict[int, int]  # µs -> count, summed over threads
    labels: dict[str, Any]


def parse_cyclictest(text: str) -> CyclictestResult:
    """cyclictest --json file: per-thread min/avg/max µs and histogram (needs -h)."""
    try:
        data = json.loads(text)
        threads = [data["thread"][k] for k in sorted(data["thread"], key=int)]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise WorkloadError(f"cyclictest: cannot read its --json output ({exc})") from exc
    if not threads:
        raise WorkloadError("cyclictest: its --json output lists no thread")
    hist: dict[int, int] = {}
    for t in threads:
        for us, count in (t.get("histogram") or {}).items():
            hist[int(us)] = hist.get(int(us), 0) + int(count)
    labels: dict[str, Any] = {
        labelkeys.CYCLES: sum(int(t.get("cycles", 0)) for t in threads),
        labelkeys.THREADS: len(threads),
        labelkeys.RT_TESTS_VERSION: data.get("rt_test_version:") or data.get("rt_test_version"),
        labelkeys.RETURN_CODE: data.get("return_code"),
    }
    if data.get("return_code", 0) != 0:
        labels[labelkeys.INVALID] = f"cyclictest reported return_code {data.get('return_code')}"
    elif labels[labelkeys.CYCLES] == 0:
        labels[labelkeys.INVALID] = "cyclictest completed no cycle"
    return CyclictestResult(threads, hist, labels)


def value_at_rank(hist: dict[int, int], rank: int) -> float | None:
    """The µs value of the rank-th smallest sample (1-based) of a histogram; None if the
    histogram holds fewer samples (the rank lies among the overflows beyond its range)."""
    seen = 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= rank:
            return float(us)
    return None


def percentile_rank(total: int, p: float) -> int:
    """Nearest-rank position of percentile p among total samples."""
    return max(1, math.ceil(p * total / 100))
