"""Curves of a value against a numeric dimension label, one line per platform: the memory
hierarchy curve (block size, seed 002 Fig. 5), LINPACK GFLOPS vs matrix order (seed 002
Fig. 4) and multicore scaling (threads). One section per dimension; a chart whose platforms
differ tenfold or more (a TCG guest beside native) is drawn once per platform, each on its
own axis, so no curve is flattened against the axis."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .. import fmt
from ..data import ReportData
from ..html import Raw
from ..sections import Section, register_section
from ..svg import Line, bytes_label, line_chart, tick

OWN_AXIS_RATIO = 10.0  # platforms this far apart get one chart (axis) each


@dataclass(frozen=True)
class CurveDim:
    label: str  # the sample label holding x
    x_name: str  # axis and title wording
    title: str  # section title
    note: str
    x_format: Callable[[float], str] = tick
    log_x: bool = True
    suites: tuple[str, ...] = ()  # only these suites ((): all)


BLOCK_SIZE = CurveDim(
    "block_size_bytes",
    "block size",
    "Block-size curves",
    "Mean of the valid repetitions at each block size, whiskers: 95% CI. Steps in the curve "
    "show the cache levels.",
    bytes_label,
)
ORDER = CurveDim(
    "order",
    "matrix order N",
    "Matrix-order curves",
    "LINPACK (HPL) GFLOPS against the matrix order, as seed 002's Fig. 4: mean of the valid "
    "repetitions, whiskers: 95% CI. Small orders are dominated by overheads; the curve "
    "flattens once the BLAS kernels are saturated.",
    log_x=False,
)
THREADS = CurveDim(
    "threads",
    "threads",
    "Multicore scaling curves",
    "Throughput (or time) at each thread count, mean of the valid repetitions, whiskers: "
    "95% CI; efficiency = rate at N threads / (N x rate at 1 thread). Past the CPUs the "
    "environment has, the curve flattens or falls.",
    suites=("multicore",),
)


def curve_section(data: ReportData, dim: CurveDim) -> Section | None:
    gs = [
        g
        for g in data.select(role="target")
        if g.key.dim(dim.label) is not None and (not dim.suites or g.key.suite in dim.suites)
    ]
    if not gs:
        return None
    charts: dict[tuple, dict[str, Line]] = {}
    for g in gs:
        rest = tuple((k, v) for k, v in g.key.dims if k != dim.label)
        ck = (g.key.test_case, g.key.metric, g.key.scenario, rest, g.unit, g.higher_is_better)
        lines = charts.setdefault(ck, {})
        ln = lines.setdefault(g.key.platform, Line(g.key.platform, data.colour(g.key.platform)))
        s = g.summary
        if s.mean is not None:
            ln.points.append((float(g.key.dim(dim.label)), s.mean, s.ci_low, s.ci_high))
    svgs = []
    for (tc, metric, scenario, rest, unit, hib), lines in charts.items():
        extra = fmt.dims(rest)
        title = f"{tc}: {metric} vs {dim.x_name} · {scenario}" + (f" · {extra}" if extra else "")
        ordered = [lines[p] for p in data.platforms if p in lines]
        for ln in ordered:
            ln.points.sort()
        y_label = f"{unit} ({'higher' if hib else 'lower'} is better)"
        for part_title, part in _axes(title, ordered):
            svgs.append(
                line_chart(
                    part_title, part, dim.x_name, y_label, log_x=dim.log_x, x_format=dim.x_format
                )
            )
    note = Raw(f'<p class="note">{dim.note}</p>')
    return Section(dim.title, note + Raw('<div class="charts">' + "".join(svgs) + "</div>"))


def split_curves(title: str, lines: list[Line]) -> list[tuple[str, list[Line]]]:
    """Axes split by scale among the curves; a single point (a fixed-rate cell) is not a
    curve and joins the part whose peak is nearest its value instead of forcing a split."""
    curves = [ln for ln in lines if len(ln.points) > 1]
    points = [ln for ln in lines if len(ln.points) == 1]
    if not curves:
        return [(title, lines)]
    parts = _axes(title, curves)
    for ln in points:
        v = max(ln.points[0][1], 1e-9)

        def gap(part: tuple[str, list[Line]], v: float = v) -> float:
            peak = max(p[1] for c in part[1] for p in c.points)
            return abs(math.log(max(peak, 1e-9) / v))

        min(parts, key=gap)[1].append(ln)
    return parts


def _axes(title: str, lines: list[Line]) -> list[tuple[str, list[Line]]]:
    """One chart for all lines, or one per scale group when their peaks span a tenfold or more
    (a TCG guest and a container in it apart from native and its containers)."""
    drawn = [ln for ln in lines if ln.points]
    peak = {ln.name: max(p[1] for p in ln.points) for ln in drawn}
    if len(drawn) < 2 or any(v <= 0 for v in peak.values()):
        return [(title, lines)]
    groups = _scale_groups(sorted(drawn, key=lambda ln: peak[ln.name]), peak)
    if len(groups) < 2:
        return [(title, lines)]
    order = {ln.name: i for i, ln in enumerate(lines)}
    out = []
    for g in sorted(groups, key=lambda g: -peak[g[-1].name]):  # the fastest group first
        g.sort(key=lambda ln: order[ln.name])
        names = ", ".join(ln.name for ln in g)
        out.append((f"{title} · {names} (own axis: 10x apart)", g))
    return out


def _scale_groups(ordered: list[Line], peak: dict[str, float]) -> list[list[Line]]:
    """Lines sorted by peak, split at the widest gap until no group spans a tenfold."""
    if len(ordered) < 2 or peak[ordered[-1].name] < OWN_AXIS_RATIO * peak[ordered[0].name]:
        return [ordered]
    gaps = [peak[b.name] / peak[a.name] for a, b in zip(ordered, ordered[1:], strict=False)]
    cut = gaps.index(max(gaps)) + 1
    return _scale_groups(ordered[:cut], peak) + _scale_groups(ordered[cut:], peak)


@register_section(50, "block-size-curves")
def block_size_curves(data: ReportData) -> Section | None:
    return curve_section(data, BLOCK_SIZE)


@register_section(51, "order-curves")
def order_curves(data: ReportData) -> Section | None:
    return curve_section(data, ORDER)


@register_section(52, "thread-curves")
def thread_curves(data: ReportData) -> Section | None:
    return curve_section(data, THREADS)
