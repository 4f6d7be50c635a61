"""Section 50: value vs block size (log x), one line per platform — the memory hierarchy
curve of seed 002 — for every test whose samples carry a block_size_bytes label."""

from __future__ import annotations

from .. import fmt
from ..data import ReportData
from ..html import Raw
from ..sections import Section, register_section
from ..svg import Line, bytes_label, line_chart

DIM = "block_size_bytes"


@register_section(50, "block-size-curves")
def block_size_curves(data: ReportData) -> Section | None:
    gs = [g for g in data.select(role="target") if g.key.dim(DIM) is not None]
    if not gs:
        return None
    charts: dict[tuple, dict[str, Line]] = {}
    for g in gs:
        rest = tuple((k, v) for k, v in g.key.dims if k != DIM)
        ck = (g.key.test_case, g.key.metric, g.key.scenario, rest, g.unit, g.higher_is_better)
        lines = charts.setdefault(ck, {})
        ln = lines.setdefault(g.key.platform, Line(g.key.platform, data.colour(g.key.platform)))
        s = g.summary
        if s.mean is not None:
            ln.points.append((float(g.key.dim(DIM)), s.mean, s.ci_low, s.ci_high))
    svgs = []
    for (tc, metric, scenario, rest, unit, hib), lines in charts.items():
        extra = fmt.dims(rest)
        title = f"{tc}: {metric} vs block size · {scenario}" + (f" · {extra}" if extra else "")
        ordered = [lines[p] for p in data.platforms if p in lines]
        y_label = f"{unit} ({'higher' if hib else 'lower'} is better)"
        svgs.append(
            line_chart(title, ordered, "block size", y_label, log_x=True, x_format=bytes_label)
        )
    note = Raw(
        '<p class="note">Mean of the valid repetitions at each block size, whiskers: '
        "95% CI. Steps in the curve show the cache levels.</p>"
    )
    return Section(
        "Block-size curves", note + Raw('<div class="charts">' + "".join(svgs) + "</div>")
    )
