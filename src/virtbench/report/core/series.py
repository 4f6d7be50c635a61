"""Section 80: time series recorded while cells ran (CPU utilization per role, and whatever
samplers and workloads record), one chart per test case · scenario · metric · role."""

from __future__ import annotations

from typing import Any

from ... import labelkeys
from ...results import PEAK_LIMIT_LABEL
from ..data import ReportData
from ..html import Raw
from ..sections import Section, register_section
from ..svg import Line, line_chart

MAX_CHARTS = 24
MAX_POINTS = 240  # per line; longer series are thinned evenly


def _thin(points: list, limit: int = MAX_POINTS) -> list:
    if len(points) <= limit:
        return points
    step = len(points) / limit
    return [points[int(i * step)] for i in range(limit)]


def _tags(labels: dict[str, Any]) -> dict[str, str]:
    """What a cell's labels say it measured beyond its platform, test case, scenario and
    repetition: a solo-peak cell's params and CPU limit (scenarios.peaks.peak_key)."""
    tags = {}
    for k, v in (labels.get(labelkeys.PARAMS) or {}).items():
        v = v[0] if isinstance(v, list) and len(v) == 1 else v
        tags[k] = f"{k}={v}"
    if PEAK_LIMIT_LABEL in labels:
        tags[PEAK_LIMIT_LABEL] = labels[PEAK_LIMIT_LABEL] or "no CPU limit"
    return tags


def _names(data: ReportData, cells: list[tuple[str, int, str]]) -> dict[str, str]:
    """cell id -> its line's name: "platform #rep", and where cells of one chart share that
    (a solo peak per file size or CPU limit), what tells them apart."""
    labels = {c.cell_id: c.labels for c in data.cells}
    shared: dict[str, list[str]] = {}
    for plat, rep, cid in cells:
        shared.setdefault(f"{plat} #{rep}", []).append(cid)
    out = {}
    for name, cids in shared.items():
        if len(cids) == 1:
            out[cids[0]] = name
            continue
        tags = {cid: _tags(labels.get(cid, {})) for cid in cids}
        keys = dict.fromkeys(k for t in tags.values() for k in t)
        differ = [k for k in keys if len({tags[cid].get(k) for cid in cids}) > 1]
        for cid in cids:
            what = [tags[cid].get(k, f"no {k}") for k in differ]
            out[cid] = f"{name} · {', '.join(what) or 'cell ' + cid.rsplit('/', 1)[-1]}"
    return out


@register_section(80, "time-series")
def time_series(data: ReportData) -> Section | None:
    rows = data.series
    if not rows:
        return None
    # one line per cell: cells sharing platform and repetition (a solo peak per file size or
    # CPU limit) are separate measurements, each on its own time axis from 0
    charts: dict[tuple, dict[tuple[str, int, str], list]] = {}
    for r in rows:
        ck = (r["suite"], r["test_case"], r["scenario"], r["metric"], r["role"], r["unit"])
        line = (r["platform"], r["repetition"], r["cell_id"])
        charts.setdefault(ck, {}).setdefault(line, []).append((r["t"], r["value"], None, None))
    seq = {c.cell_id: c.seq for c in data.cells}
    svgs = []
    for (_suite, tc, scenario, metric, role, unit), per in list(charts.items())[:MAX_CHARTS]:
        names = _names(data, list(per))
        lines = []
        for p in data.platforms:
            for plat, rep, cid in sorted(per, key=lambda k: (k[1], seq.get(k[2], 0))):
                if plat == p:
                    lines.append(Line(names[cid], data.colour(p), _thin(per[(plat, rep, cid)])))
        title = f"{tc} · {scenario} · {role}: {metric}"
        svgs.append(
            line_chart(title, lines, "seconds since cell start", unit, width=560, height=240)
        )
    note = (
        f"Showing {MAX_CHARTS} of {len(charts)} charts. " if len(charts) > MAX_CHARTS else ""
    ) + (
        "One line per cell: platform and repetition (same colour per platform), and what "
        "tells apart cells that share them (a solo peak per file size or CPU limit)."
    )
    return Section(
        "Time series",
        Raw(f'<p class="note">{note}</p><div class="charts">' + "".join(svgs) + "</div>"),
    )
