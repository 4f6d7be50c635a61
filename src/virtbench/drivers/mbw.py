"""mbw: single-thread memory copy bandwidth per copy method, read from its -q report lines."""

from __future__ import annotations

import re
from typing import Any

from ..errors import WorkloadError

# "AVG\tMethod: MEMCPY\tElapsed: 0.06434\tMiB: 256.00000\tCopy: 3979.103 MiB/s"
_LINE = re.compile(
    r"^(?P<it>\d+|AVG)\s+Method:\s+(?P<method>\w+)\s+Elapsed:\s+(?P<elapsed>[\d.]+)\s+"
    r"MiB:\s+(?P<mib>[\d.]+)\s+Copy:\s+(?P<rate>[\d.]+|inf)\s+MiB/s",
    re.M,
)
METHODS = {"memcpy": "-t0", "dumb": "-t1", "mcblock": "-t2"}


def argv(iterations: int, array_mib: int) -> list[str]:
    """Every method of METHODS, `iterations` copies each of two `array_mib` arrays."""
    return ["mbw", "-q", "-n", str(iterations), *METHODS.values(), str(array_mib)]


def parse(text: str, what: str) -> dict[str, dict[str, Any]]:
    """method (lower case) -> {"avg": MiB/s, "runs": [MiB/s, ...], "mib": array size}."""
    out: dict[str, dict[str, Any]] = {}
    for m in _LINE.finditer(text):
        entry = out.setdefault(m["method"].lower(), {"avg": None, "runs": [], "mib": None})
        rate = float(m["rate"])
        entry["mib"] = float(m["mib"])
        if m["it"] == "AVG":
            entry["avg"] = rate
        else:
            entry["runs"].append(rate)
    if not out:
        raise WorkloadError(f"{what}: no 'Method: ... Copy: ... MiB/s' lines in mbw output")
    for method, entry in out.items():
        if entry["avg"] is None:
            raise WorkloadError(f"{what}: no AVG line for method {method} in mbw output")
    return out


def untimed(entry: dict[str, Any]) -> str | None:
    """Why a method's AVG is no measurement: a copy faster than the clock can time reports
    inf; None when it is one."""
    if entry["avg"] == float("inf") or any(r == float("inf") for r in entry["runs"]):
        return "mbw timed a copy as 0 s (array too small): use a larger array"
    return None
