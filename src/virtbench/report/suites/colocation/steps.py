"""Figures against the workload's intensity, per file size (seeds 000 and 003), store only.

- `platform_charts`: per platform and file size, the target's throughput in every scenario
  against its offered rate (seed 003 Fig. 16, seed 000 Fig. 3b);
- `pair_charts`: per platform, scenario and file size, each environment and their sum per
  intensity step (seed 000 Figs. 4-6, seed 003 Figs. 15, 18-19);
- `env_rate_charts`: CPU, blocked and waiting time, µs/exe and exe/s of every environment per
  step (seed 003 Table 4, Figs. 1-2, 5-10), not one mean per cell;
- `degradation_table`: throughput, reply and transfer time against solo (seed 003 Table 3).

Invalid steps stay on the lines as red-ringed hollow markers (the fall after saturation is
part of the curve); platforms whose scales differ tenfold get their own axes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from ....analysis import colocation_steps as cs
from ....analysis.colocation import value_order
from ....results import is_solo_peak
from ... import fmt, html, svg
from ...core.curves import split_curves

CHART_W = 640
ENV_TITLES = {
    "cpu_util": ("CPU utilization", "CPU %"),
    "sched_blocked_pct": ("blocked time", "blocked %"),
    "sched_wait_pct": ("waiting time", "waiting %"),
    "cpu_us_per_exe": ("CPU time per execution", "µs/exe"),
    "exe_per_s": ("executions per second", "exe/s"),
}
SUM_LINE = "sum of the environments"
INVALID_NOTE = (
    "Hollow red-ringed markers: steps measured but invalid (no repetition valid; hover for "
    "the reason), drawn so the fall after saturation shows."
)


def _line(name: str, colour: str, pts: list[cs.StepPoint], dashed: bool = False) -> svg.Line:
    return svg.Line(
        name,
        colour,
        [(p.x, p.mean, p.low, p.high) for p in pts],
        invalid={p.x: p.invalid for p in pts if p.invalid},
        dashed=dashed,
    )


def _size(size: Any) -> str:
    return f"{size} KB files" if size is not None else "all files"


def _charts(title: str, lines: list[svg.Line], x_label: str, y_label: str) -> list[str]:
    return [
        svg.line_chart(t, part, x_label, y_label, width=CHART_W, height=280)
        for t, part in split_curves(title, lines)
    ]


def platform_charts(data, points: dict[cs.SweepKey, list[cs.StepPoint]]) -> list[str]:
    """Per platform and size: the target's reply rate vs offered rate in every scenario."""
    per: dict[tuple[str, str, Any], dict[str, list[cs.StepPoint]]] = defaultdict(dict)
    for (platform, tc, scenario, role, size), pts in points.items():
        if role == "target" and pts:
            per[(platform, tc, size)][scenario] = pts
    out = []
    order = {p: i for i, p in enumerate(data.platforms)}
    for (platform, tc, size), scen in sorted(
        per.items(), key=lambda kv: (order.get(kv[0][0], 99), str(kv[0][1]), value_order(kv[0][2]))
    ):
        lines = [
            _line(sc, svg.PALETTE[i % len(svg.PALETTE)], pts)
            for i, (sc, pts) in enumerate(sorted(scen.items(), key=lambda kv: _scen(kv[0])))
        ]
        out += _charts(
            f"{platform} · {tc}: target throughput per scenario, {_size(size)}",
            lines,
            "target's offered rate (req/s)",
            "replies/s",
        )
    return out


def pair_charts(data, points: dict[cs.SweepKey, list[cs.StepPoint]]) -> list[str]:
    """Per platform, scenario and target file size: every environment that ran beside that
    sweep (at whatever size it served) and the sum, per step."""
    partners = cs.concurrent_sweeps(data.series)
    per: dict[tuple[str, str, str], dict[str, dict[Any, list[cs.StepPoint]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for (platform, tc, scenario, role, size), pts in points.items():
        if pts:
            per[(platform, tc, scenario)][role][size] = pts
    out = []
    for (platform, tc, scenario), roles in sorted(
        per.items(), key=lambda kv: (kv[0][0], kv[0][1], _scen(kv[0][2]))
    ):
        for size in sorted(roles.get("target", {}), key=value_order):
            beside = _beside(roles, partners.get((platform, tc, scenario, size)), size)
            if not beside:
                continue  # a lone environment is in platform_charts
            out.append(_pair_chart(platform, scenario, size, roles["target"][size], beside))
    return out


def _beside(
    roles: dict[str, dict[Any, list[cs.StepPoint]]], partners: set | None, size: Any
) -> dict[str, list[cs.StepPoint]]:
    """The neighbours' sweeps that ran with the target's sweep of `size`: from the series'
    times when recorded, else the same size, else a neighbour's only size."""
    out = {}
    for role, sizes in roles.items():
        if role == "target":
            continue
        if " beside " in role:  # one run per target size (analysis: sweep_points)
            base, _sep, _rest = role.partition(" beside ")
            if role == cs.beside_role(base, size):
                out |= {base if s == size else f"{base} ({s} KB)": p for s, p in sizes.items()}
            continue
        if partners is not None:
            hits = [s for s in sizes if (role, s) in partners]
        else:
            hits = [size] if size in sizes else list(sizes)[:1] if len(sizes) == 1 else []
        for s in hits:
            out[role if s == size else f"{role} ({s} KB)"] = sizes[s]
    return out


def _pair_chart(
    platform: str,
    scenario: str,
    size: Any,
    target: list[cs.StepPoint],
    beside: dict[str, list[cs.StepPoint]],
) -> str:
    roles = dict(sorted(beside.items()))
    lines = [
        _line(role, svg.PALETTE[(i + 2) % len(svg.PALETTE)], pts)
        for i, (role, pts) in enumerate(roles.items())
    ]
    lines.append(_line("target", svg.PALETTE[1], target))  # drawn last: on top
    # the sum at steps every environment measured: a gap is not a zero; at a step, the mean
    # over the repetitions (cells) present in all of each one's sum, so two environments'
    # means over different runs are never added. Past saturation a step is often flagged in
    # one environment (its client out of sockets): the sum is drawn there too, flagged as
    # the environments' own lines are, so the aggregate's plateau or fall shows
    steps = [{p.step: p for p in pts} for pts in [target, *roles.values()]]
    total, flagged = [], {}
    for st in sorted(set.intersection(*(set(s) for s in steps))):
        cells = set.intersection(*(set(s[st].by_cell) for s in steps))
        sums = [sum(s[st].by_cell[c] for s in steps) for c in cells]
        if not sums:
            continue
        x = steps[0][st].x
        total.append((x, statistics.fmean(sums), None, None))
        why = [
            f"{name}: {s[st].invalid}"
            for name, s in zip(["target", *roles], steps, strict=True)
            if s[st].invalid
        ]
        if why:
            flagged[x] = "; ".join(why)
    if total:
        lines.insert(0, svg.Line(SUM_LINE, "#222", total, invalid=flagged, dashed=True))
    pct = all(p.x <= 200 for p in target) and len({p.x for p in target}) > 1
    return svg.line_chart(
        f"{platform} · {scenario}: throughput per environment, target {_size(size)}",
        lines,
        "intensity (% of each one's own capacity)" if pct else "target's offered rate (req/s)",
        "replies/s (min–max whiskers)",
        width=CHART_W,
        height=280,
    )


IDLE_KINDS = ("solo", "idle-neighbours")  # seed 003 Table 4, Figs. 5-10: 0 vs 1..3 idle
FAMILIES = (("idle", "solo and idle neighbours"), ("busy", "busy neighbours, solo as reference"))


def _family(scenario: str) -> str:
    return "idle" if scenario.split(":")[0] in IDLE_KINDS else "busy"


def env_rate_charts(data) -> list[str]:
    """Per platform, size, metric and scenario family (idle neighbours; busy neighbours with
    solo for reference): every role of every scenario vs the target's offered rate."""
    steps = cs.env_by_step(data.samples, data.series)
    per: dict[tuple[str, Any, str, str], list[tuple[str, str, list[cs.StepPoint]]]]
    per = defaultdict(list)
    for ((platform, _tc, scenario, role, size), metric), pts in steps.items():
        if len(pts) < 2 or is_solo_peak(scenario):
            continue
        for fam, _what in FAMILIES:
            if _family(scenario) == fam or scenario == "solo":
                per[(platform, size, metric, fam)].append((scenario, role, pts))
    # one colour per scenario across every chart
    every = sorted({k[0][2] for k in steps}, key=_scen)
    families = dict(FAMILIES)
    out = []
    for (platform, size, metric, fam), lines_in in sorted(
        per.items(),
        key=lambda kv: (
            kv[0][0], value_order(kv[0][1]), kv[0][3] != "idle", list(ENV_TITLES).index(kv[0][2])
        ),
    ):  # fmt: skip
        if {s for s, _r, _p in lines_in} == {"solo"}:
            continue  # solo alone is in every family's chart already
        lines = []
        for scenario, role, pts in sorted(lines_in, key=lambda t: (_scen(t[0]), _role(t[1]))):
            colour = svg.PALETTE[every.index(scenario) % len(svg.PALETTE)]
            # one colour per scenario; the target solid, its neighbours dashed
            lines.append(_line(f"{scenario} · {role}", colour, pts, dashed=role != "target"))
        what, unit = ENV_TITLES[metric]
        out.append(
            svg.line_chart(
                f"{platform}: {what} vs rate, {_size(size)} ({families[fam]})",
                lines,
                "target's offered rate (req/s)",
                f"{unit} (step mean)",
                width=CHART_W,
                height=280,
            )
        )
    return out


def _pct(v: float | None) -> str:
    return fmt.signed_pct(v, 1, space=" ")


def _v(v: float | None, spec: str = ".4g") -> str:
    return "–" if v is None else format(v, spec)


def degradation_table(data) -> tuple[str, str]:
    """Seed 003 Table 3 (HTML, Markdown)."""
    rows = cs.degradation_rows(data.samples)
    if not rows:
        return "", ""
    headers = [
        "platform",
        "size KB",
        "solo offered req/s",
        "scenario",
        "throughput solo → scen.",
        "thr. degr.",
        "reply ms solo → scen.",
        "RT degr.",
        "transfer ms solo → scen.",
        "TT degr.",
    ]
    body = []
    for r in rows:
        body.append(
            [
                r.platform,
                str(r.size),
                _v(r.x, ".0f"),
                r.scenario + (" (invalid step)" if r.invalid else ""),
                f"{_v(r.throughput[0])} → {_v(r.throughput[1])}",
                _pct(r.throughput[2]),
                f"{_v(r.reply_ms[0], '.3g')} → {_v(r.reply_ms[1], '.3g')}",
                _pct(r.reply_ms[2]),
                f"{_v(r.transfer_ms[0], '.3g')} → {_v(r.transfer_ms[1], '.3g')}",
                _pct(r.transfer_ms[2]),
            ]
        )
    page = (
        "<h3>Throughput, reply time and transfer time against solo at the same rate "
        "(seed 003 Table 3)</h3><p class='note'>Three offered rates per file size: solo's "
        "lowest, middle and highest valid step; each scenario at that rate: its step there "
        "(within 1 %), else read linearly between its two steps around it (outside its "
        "steps: no row). Degradation: positive = worse than solo; '–' where solo's time "
        "was 0 (below httperf's 0.1 ms resolution, as the paper's 1 kB transfer time).</p>"
        + str(html.scroll(str(html.table(headers, body))))
    )
    return page, "degradation vs solo (seed 003 Table 3):\n" + html.md_table(headers, body)


def _scen(s: str) -> tuple:
    """solo first, then by kind and count (idle-neighbours:1 before :3)."""
    kind, _, arg = s.partition(":")
    return (kind != "solo", kind, value_order(int(arg)) if arg.isdigit() else value_order(arg))


def _role(r: str) -> tuple:
    return (r != "target", r)
