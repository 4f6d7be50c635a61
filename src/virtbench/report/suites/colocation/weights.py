"""CPU weights (seed 003 §6, Figs. 24-25): per platform, test case and served point, what
each weights configuration gave every environment, and whether the weights acted at all.

A weight divides CPU only between environments runnable at the same moment; a pair that is
not (closed-loop clients with too few requests outstanding for the budget's bursts,
docs/colocation.md "Weights need contention") splits its CPU about evenly whatever the
weights say. So next to each environment's throughput the table puts the CPU split measured
in the same cell (cpu_util summaries of that point) and says, per configuration, whether the
heavier environment served more in every repetition.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from .... import labelkeys
from ....analysis.colocation import dims_order
from ... import html, svg
from .roles import Point, point_text, sample_point, scenario_order

KIND = "weights"
ROLES = ("target", "neighbour-1")
# a CPU split this close to even did not follow unequal weights
EVEN = 1.2
# "served more" needs this margin in every repetition (a few % is run-to-run noise)
MORE = 1.1


def _cells(data, primary: dict[str, str]) -> dict[tuple[str, str, Point], dict[str, dict]]:
    """(platform, test case, point) -> cell id -> {scenario, weights, rps: role -> value,
    cpu: role -> %}; a sweep's steps are left out (their per-step charts show them). A CPU
    summary names fewer labels than the throughput (no network path), so it joins the
    point of its cell whose labels include all of its own."""
    out: dict[tuple[str, str, Point], dict[str, dict]] = defaultdict(dict)
    cpu: dict[str, list[tuple[set, str, float]]] = defaultdict(list)
    for r in data.samples:
        lab = r["labels"]
        if (
            lab.get(labelkeys.SCENARIO_KIND) != KIND
            or r["role"] not in ROLES
            or labelkeys.STEP in lab
        ):
            continue
        pt = sample_point(data, r)
        if r["metric"] == "cpu_util" and labelkeys.STDEV in lab:
            cpu[r["cell_id"]].append((set(pt), r["role"], float(r["value"])))
        elif r["metric"] == primary.get(r["test_case"]) and r["valid"]:
            cell = out[(r["platform"], r["test_case"], pt)].setdefault(
                r["cell_id"],
                {"scenario": r["scenario"], "weights": lab.get(labelkeys.WEIGHTS) or {}, "rps": {}},
            )
            cell["rps"][r["role"]] = float(r["value"])
            cell["unit"] = r.get("unit") or ""
    for (_p, _tc, pt), cells in out.items():
        for cell_id, cell in cells.items():
            cell["cpu"] = {role: v for at, role, v in cpu.get(cell_id, []) if at <= set(pt)}
    return out


def _heavier(weights: dict[str, Any]) -> tuple[str, str] | None:
    """(heavier role, lighter role), or None when the pair weighs the same."""
    t, n = float(weights.get("target") or 1), float(weights.get("neighbour-1") or 1)
    if t == n:
        return None
    return ("target", "neighbour-1") if t > n else ("neighbour-1", "target")


def _ratio(hi: float, lo: float) -> float | None:
    """heavier ÷ lighter; a lighter side that got nothing while the heavier got some is the
    weights' strongest effect (infinite), not a repetition to leave out."""
    if lo:
        return hi / lo
    return math.inf if hi else None


def _num(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2f}"


def _ratio_text(values: list[float]) -> str:
    if not values:
        return "–"
    m = statistics.fmean(values)
    spread = f" [{_num(min(values))}–{_num(max(values))}]" if len(values) > 1 else ""
    return f"×{_num(m)}{spread}"


def _verdict(served: list[float], cpu: list[float], heavy: tuple[str, str] | None) -> str:
    if heavy is None:
        return "equal weights"
    if not served:
        return "no valid pair"
    if all(r >= MORE for r in served):
        return f"{heavy[0]} (heavier) served ≥ {MORE:g}x more in {len(served)} of {len(served)}"
    if cpu and statistics.fmean(cpu) < EVEN:
        return "weights did not act: the CPU split was about even (the pair did not contend)"
    if not cpu and all(r < MORE for r in served):
        return "weights did not act: about even throughput (no CPU split stored)"
    won = sum(r >= MORE for r in served)
    return f"undecided: {heavy[0]} (heavier) served ≥ {MORE:g}x more in {won} of {len(served)}"


def _where_order(item: tuple) -> tuple:
    (platform, tc, pt), _cells = item
    return (platform, tc, dims_order(pt))


def weight_views(data, primary: dict[str, str]) -> tuple[list[str], str]:
    """Per (platform, test case, point): a bar chart (groups: configurations; bars: each
    environment's throughput, whiskers min-max over repetitions) and one table for all."""
    charts, rows = [], []
    for (platform, tc, pt), cells in sorted(_cells(data, primary).items(), key=_where_order):
        by_scen: dict[str, list[dict]] = defaultdict(list)
        for cell in cells.values():
            if all(role in cell["rps"] for role in ROLES):
                by_scen[cell["scenario"]].append(cell)
        if not by_scen:
            continue
        scen = sorted(by_scen, key=scenario_order)
        where = " · ".join(x for x in (platform, tc, point_text(pt)) if x)
        bars = {}
        for s in scen:
            for role in ROLES:
                vals = [c["rps"][role] for c in by_scen[s]]
                lo, hi = (min(vals), max(vals)) if len(vals) > 1 else (None, None)
                bars[(s, role)] = svg.Bar(statistics.fmean(vals), lo, hi, f"n={len(vals)}")
            rows.append(_row(where, s, by_scen[s]))
        series = [(r, svg.PALETTE[(i + 1) % len(svg.PALETTE)]) for i, r in enumerate(ROLES)]
        unit = next(c.get("unit", "") for c in cells.values() if "unit" in c)
        charts.append(svg.bar_chart(f"{where}: throughput per weights", scen, series, bars, unit))
    if not rows:
        return [], ""
    headers = [
        "where",
        "scenario (host:target:neighbour)",
        "target",
        "neighbour-1",
        "aggregated",
        "heavier ÷ lighter served",
        "CPU % target : neighbour-1",
        "heavier ÷ lighter CPU",
        "verdict",
    ]
    return charts, str(html.scroll(str(html.table(headers, rows))))


def _row(where: str, scenario: str, cells: list[dict]) -> list[str]:
    heavy = _heavier(cells[0]["weights"])
    served: list[float] = []
    cpu: list[float] = []
    if heavy:
        hi, lo = heavy
        ratios = (_ratio(c["rps"][hi], c["rps"][lo]) for c in cells)
        served = [r for r in ratios if r is not None]
        cpu_ratios = (
            _ratio(c["cpu"][hi], c["cpu"][lo]) for c in cells if {hi, lo} <= c["cpu"].keys()
        )
        cpu = [r for r in cpu_ratios if r is not None]

    def mean(role: str, what: str = "rps") -> float | None:
        vals = [c[what][role] for c in cells if what == "rps" or c[what].get(role)]
        return statistics.fmean(vals) if vals else None

    agg = statistics.fmean(sum(c["rps"][r] for r in ROLES) for c in cells)
    t_cpu, n_cpu = mean("target", "cpu"), mean("neighbour-1", "cpu")
    split = f"{t_cpu:.1f} : {n_cpu:.1f}" if t_cpu is not None and n_cpu is not None else "–"
    return [
        where,
        scenario,
        f"{mean('target'):.4g} (n={len(cells)})",
        f"{mean('neighbour-1'):.4g}",
        f"{agg:.4g}",
        _ratio_text(served) if heavy else "–",
        split,
        _ratio_text(cpu) if heavy else "–",
        _verdict(served, cpu, heavy),
    ]
