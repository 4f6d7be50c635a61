"""SciMark 2.0 reports: Java's own (`jnt.scimark2.commandline`, run N times in one JVM by the
VbScimark harness) and the C port of its kernels (`vb-scimark`, native or under wasmtime).

Both print SciMark's report lines per iteration, framed by `vb-iteration N start_ms=...` /
`end_ms=...`; the JVM harness adds `vb-jvm key: value` lines, the Wasm runner `vb-wasm ...`.
The first iteration includes warm-up (JIT compilation, caches); the later ones are steady.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from ..errors import WorkloadError

# SciMark's report label -> figure (Mflops); the composite is the mean of the five kernels
FIGURES = {
    "Composite Score": "composite_mflops",
    "FFT": "fft_mflops",
    "SOR": "sor_mflops",
    "Monte Carlo": "montecarlo_mflops",
    "Sparse matmult": "sparse_mflops",
    "LU": "lu_mflops",
}
KERNELS = tuple(f for f in FIGURES.values() if f != "composite_mflops")

_LINE = re.compile(
    r"^(Composite Score|FFT|SOR|Monte Carlo|Sparse matmult|LU)\s*(\([^)]*\))?\s*:\s*(\S+)"
)
_ITER = re.compile(r"^vb-iteration (\d+) (start|end)_ms=([\d.]+)")
_INFO = re.compile(r"^vb-(jvm|wasm) (\w+): (.*)$")


@dataclass
class Iteration:
    figures: dict[str, float] = field(default_factory=dict)  # FIGURES values -> Mflops
    start_ms: float | None = None
    end_ms: float | None = None


@dataclass
class ScimarkReport:
    iterations: list[Iteration]
    sizes: dict[str, str]  # figure -> problem size as SciMark prints it ("1024", "100x100")
    info: dict[str, str]  # vb-jvm / vb-wasm key -> value

    def first(self) -> dict[str, float]:
        return self.iterations[0].figures

    def steady(self) -> dict[str, float]:
        """Median of the iterations after the first (the only one when there is one)."""
        later = self.iterations[1:] or self.iterations
        return {f: statistics.median(it.figures[f] for it in later) for f in FIGURES.values()}


def parse(text: str, what: str) -> ScimarkReport:
    iterations: list[Iteration] = []
    sizes: dict[str, str] = {}
    info: dict[str, str] = {}
    current: Iteration | None = None
    for line in text.splitlines():
        line = line.strip()
        if m := _ITER.match(line):
            if m.group(2) == "start":
                current = Iteration(start_ms=float(m.group(3)))
                iterations.append(current)
            elif current is not None:
                current.end_ms = float(m.group(3))
        elif m := _INFO.match(line):
            info[m.group(2)] = m.group(3).strip()
        elif m := _LINE.match(line):
            if current is None:  # a plain SciMark report: one iteration, no framing
                current = Iteration()
                iterations.append(current)
            figure = FIGURES[m.group(1)]
            try:
                current.figures[figure] = float(m.group(3))
            except ValueError as e:
                raise WorkloadError(f"{what}: bad SciMark figure in {line!r}") from e
            if m.group(2):
                sizes[figure] = m.group(2).strip("()").replace(" ", "")
    if not iterations:
        raise WorkloadError(f"{what}: no SciMark report in the output")
    for n, it in enumerate(iterations, 1):
        missing = [f for f in FIGURES.values() if f not in it.figures]
        if missing:
            raise WorkloadError(
                f"{what}: SciMark iteration {n} is incomplete (no {', '.join(missing)})"
            )
    return ScimarkReport(iterations, sizes, info)


def invalid_reason(figures: dict[str, float]) -> str | None:
    """Why a report is no measurement (a kernel ran too briefly to time), else None."""
    bad = [f for f, v in figures.items() if not v > 0 or v != v or v == float("inf")]
    return f"non-positive or non-finite Mflops: {', '.join(bad)}" if bad else None
