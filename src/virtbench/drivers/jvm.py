"""The JVM's own settings as virtbench sets them: heap, garbage collector, JIT mode.

Set explicitly rather than left to ergonomics: a JVM picks its collector and heap from the
CPUs and memory it sees, so a 1-vCPU guest would otherwise run Serial GC against G1 on the
host and the platforms would differ in more than the layer being measured.
"""

from __future__ import annotations

import re

GCS = {"g1": "-XX:+UseG1GC", "parallel": "-XX:+UseParallelGC", "serial": "-XX:+UseSerialGC"}
JITS = {
    "tiered": (),  # C1 then C2, HotSpot's default
    "c1": ("-XX:TieredStopAtLevel=1",),  # client compiler only: fast warm-up, slower code
    "c2": ("-XX:-TieredCompilation",),  # server compiler only: slow warm-up
    "interpreter": ("-Xint",),  # no JIT at all
}
_HEAP = re.compile(r"^\d+[kmg]$", re.IGNORECASE)


def valid_heap(heap: str) -> bool:
    return bool(_HEAP.match(heap))


def flags(heap: str, gc: str, jit: str) -> list[str]:
    """JVM options: a fixed heap (-Xms = -Xmx: no resizing during the run), the collector,
    the JIT mode; no hsperfdata file (read-only or tiny /tmp inside some environments)."""
    return [f"-Xms{heap}", f"-Xmx{heap}", GCS[gc], *JITS[jit], "-XX:-UsePerfData"]


def labels(heap: str, gc: str, jit: str) -> dict[str, str]:
    return {"heap": heap, "gc": gc, "jit": jit, "jvm_flags": " ".join(flags(heap, gc, jit))}
