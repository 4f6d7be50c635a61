"""What the SciMark test cases share (java `scimark`, wasm `scimark-c` and `scimark-wasm`):
parameters, metrics and the samples of a report, so JVM, native and Wasm give the same
figures in the same unit."""

from __future__ import annotations

from typing import Any

from .. import labelkeys
from ..drivers import scimark
from .base import Metric, Param, Sample, Workload

PARAMS = {
    "iterations": Param(3, "SciMark runs in one process (the first is warm-up)", min=2, max=100),
    "min_time": Param(0.5, "minimum seconds per kernel measurement", min=0.01, max=60),
    "size": Param("small", "problem sizes (large: out of cache)", choices=("small", "large")),
}
METRICS = (
    Metric("composite_mflops", "Mflops", True, primary=True),
    *(Metric(k, "Mflops", True) for k in scimark.KERNELS),
    Metric("composite_first_mflops", "Mflops", True),
)


def args(params: dict[str, Any]) -> list[str]:
    """ITERATIONS [-large] MIN_TIME: the JVM harness and the C kernels take the same."""
    large = ["-large"] if params["size"] == "large" else []
    return [str(params["iterations"]), *large, str(params["min_time"])]


def samples(
    w: Workload, report: scimark.ScimarkReport, labels: dict[str, Any], extra: dict[str, float]
) -> list[Sample]:
    """Steady state (median after the first run), the first run, `extra` figures; all flagged
    invalid when a steady figure is no measurement."""
    common = {
        **labels,
        "iterations": len(report.iterations),
        "sizes": ",".join(f"{k}={v}" for k, v in report.sizes.items()),
    }
    steady = report.steady()
    figures = {**steady, "composite_first_mflops": report.first()["composite_mflops"], **extra}
    out = [w.sample(f, v, **common) for f, v in figures.items()]
    invalid = scimark.invalid_reason(steady)
    if invalid:
        for s in out:
            s.labels[labelkeys.INVALID] = invalid
    return out
