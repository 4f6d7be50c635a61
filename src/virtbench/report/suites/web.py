"""Report sections of the web and network suites, from the store's samples only.

- throughput vs offered rate, one chart per file size, a line per platform (and scenario):
  the shape of seed 000 Fig. 5 and seed 003 Fig. 16; invalid (client-limited, overloaded)
  steps stay on the lines as marked points, so the fall after saturation shows; platforms a
  tenfold apart (VMs under TCG beside native) get one axis each
- peak sustained throughput per file size and platform (mean ± CI over repetitions, the
  offered rate where it was reached), and wrk's closed-loop maximum beside it
- round-trip latency percentiles (sockperf) and iperf3 throughput per platform
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ... import labelkeys, suites
from ...analysis.colocation_steps import sweep_points
from ...results import PEAK_LIMIT_LABEL, shown_scenario
from .. import fmt, html, svg
from ..core.curves import split_curves
from ..sections import Section, register_section


def _rows(data, test_case: str) -> list[dict[str, Any]]:
    return [r for r in data.samples if r["test_case"] == test_case]


def client_text(labels: dict[str, Any]) -> str | None:
    """A fixed-rate step's client as its labels say (drivers/httperf.size_clients):
    "4 httperf, 4 per client CPU, 4.4 s timeout"; None for a step without them (a sweep's).
    It decides what its reply times hold: httperf busy-polls, so processes sharing a CPU
    wait for it, and a shorter timeout counts slow replies as errors sooner."""
    if labels.get(labelkeys.TIMEOUT_S) is None or labels.get(labelkeys.CLIENTS) is None:
        return None
    per = labels.get(labelkeys.CLIENTS_PER_CPU)
    text = f"{labels[labelkeys.CLIENTS]} httperf" + (f", {per} per client CPU" if per else "")
    return text + f", {labels[labelkeys.TIMEOUT_S]:g} s timeout"


def fixed_clients(data) -> dict[tuple[str, str, str], str]:
    """(platform, shown scenario, file size as text) -> the client of the target's
    fixed-rate steps there (several if the repetitions differed, e.g. with the rate)."""
    found: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in _rows(data, "httperf-sweep"):
        lab = r["labels"]
        if r["metric"] != "offered_rate" or r["role"] != "target":
            continue
        if lab.get(labelkeys.PHASE) != "fixed-rate" or (text := client_text(lab)) is None:
            continue
        scenario = shown_scenario(r["scenario"], {PEAK_LIMIT_LABEL: lab.get(PEAK_LIMIT_LABEL)})
        found[(r["platform"], scenario, str(lab.get(labelkeys.FILE_SIZE_KB)))].add(text)
    return {k: " / ".join(sorted(v)) for k, v in found.items()}


def _who(platform: str, scenario: str, scenarios: int) -> str:
    return platform if scenarios < 2 else f"{platform} · {scenario}"


def curves(data) -> list[str]:
    """Per file size: every platform's target throughput vs offered rate; invalid steps are
    drawn as marked points (not dropped), and platforms a tenfold apart get their own axis."""
    # the target's curve only: co-located neighbours are the co-location section's business
    points = {
        k: v
        for k, v in sweep_points(_rows(data, "httperf-sweep"), "reply_rate", x="offered").items()
        if k[3] == "target" and v
    }
    scenarios = len({r["scenario"] for r in _rows(data, "httperf-sweep") if r["role"] == "target"})
    out = []
    order = {p: i for i, p in enumerate(data.platforms)}
    for size in sorted({k[4] for k in points}, key=lambda s: (s is None, s)):
        keys = sorted(
            (k for k in points if k[4] == size), key=lambda k: (order.get(k[0], 99), k[2])
        )
        lines = []
        for i, k in enumerate(keys):
            platform, _tc, scenario = k[:3]
            colour = data.colour(platform) if scenarios < 2 else svg.PALETTE[i % len(svg.PALETTE)]
            pts = points[k]
            lines.append(
                svg.Line(
                    _who(platform, scenario, scenarios),
                    colour,
                    [(p.x, p.mean, p.low, p.high) for p in pts],
                    invalid={p.x: p.invalid for p in pts if p.invalid},
                )
            )
        title = f"httperf: server throughput vs offered rate, {size} KB files"
        for part_title, part in split_curves(title, lines):
            out.append(
                svg.line_chart(part_title, part, "offered rate (req/s)", "replies/s", width=680)
            )
        notes = [f"{ln.name}: {len(ln.invalid)} invalid step(s)" for ln in lines if ln.invalid]
        said = "Whiskers: min–max over repetitions."
        if notes:
            said += (
                " Invalid steps are drawn as hollow red-ringed markers on the line (hover for "
                f"the reason): {'; '.join(notes)}. Reasons are listed in the invalid-samples "
                "section."
            )
        out.append(f"<p class='note'>{html.h(said)}</p>")
    return out


def _phases(data) -> dict[tuple[str, str, Any], str | None]:
    """(platform, scenario, file size) -> phase of the httperf headline there: "fixed-rate"
    when the workload ran one step at a set rate (co-location load=PCT), None for a sweep."""
    return {
        (r["platform"], r["scenario"], r["labels"].get(labelkeys.FILE_SIZE_KB)): r["labels"].get(
            labelkeys.PHASE
        )
        for r in _rows(data, "httperf-sweep")
        if r["metric"] == "peak_throughput" and r["role"] == "target"
    }


def _group_table(
    data,
    test_case: str,
    metrics: list[tuple[str, str]],
    dim: str | None,
    keep: Callable[[tuple], bool] | None = None,
):
    """Rows: platform × scenario (× dim value); columns: metric mean ± CI (n).
    `keep(row key)` filters rows (e.g. sweep peaks vs fixed-rate steps)."""
    groups = data.select(test_case=test_case, role="target")
    # a dimension with one value in the whole run is not part of group keys: read it back
    # (samples without it, such as a cell's per-role summaries, say nothing about it); the
    # target's rows only, as the table's: a different:50 neighbour's size is not the target's
    rows = [r for r in _rows(data, test_case) if r["role"] == "target"]
    only = {r["labels"].get(dim) for r in rows} - {None} if dim else set()
    fallback = next(iter(only)) if len(only) == 1 else None
    table: dict[tuple, dict[str, str]] = defaultdict(dict)
    for g in groups:
        if g.key.metric not in dict(metrics):
            continue
        value = g.key.dim(dim) if dim else None
        scenario = shown_scenario(g.key.scenario, {PEAK_LIMIT_LABEL: g.key.dim(PEAK_LIMIT_LABEL)})
        row = (g.key.platform, scenario, fallback if value is None else value)
        cell = fmt.mean_ci(g.summary.mean, g.summary.ci_half, g.unit)
        cell += f" (n={g.summary.n}" + (f", {g.n_invalid} invalid)" if g.n_invalid else ")")
        table[row][g.key.metric] = cell
    order = {p: i for i, p in enumerate(data.platforms)}
    if keep is not None:
        table = {k: v for k, v in table.items() if keep(k)}
    keys = sorted(table, key=lambda k: (k[2] if k[2] is not None else 0, order.get(k[0], 99), k[1]))
    headers = ["platform", "scenario"] + ([dim] if dim else []) + [t for _m, t in metrics]
    rows = [
        [k[0], k[1], *([str(k[2])] if dim else []), *(table[k].get(m, "–") for m, _t in metrics)]
        for k in keys
    ]
    return headers, rows


def _section(title: str, parts: list[str], md: str = "") -> Section:
    return Section(title, html.Raw("\n".join(parts)), markdown=md)


@register_section(order=40, name="web")
def web_section(data) -> Section | None:
    if not any(r["suite"] == suites.WEB for r in data.samples):
        return None
    parts = curves(data)
    md = ""
    peak = [("peak_throughput", "peak throughput"), ("peak_offered_rate", "at offered rate")]
    phases = _phases(data)
    headers, rows = _group_table(
        data, "httperf-sweep", peak, "file_size_kb", lambda k: phases.get(k) is None
    )
    if rows:
        parts.append("<h3>Peak sustained throughput (httperf sweep, valid steps only)</h3>")
        parts.append(str(html.scroll(str(html.table(headers, rows)))))
        md += "peak sustained throughput (httperf):\n" + html.md_table(headers, rows) + "\n"
    fixed = [("peak_throughput", "throughput"), ("peak_offered_rate", "offered rate")]
    headers, rows = _group_table(
        data, "httperf-sweep", fixed, "file_size_kb", lambda k: phases.get(k) == "fixed-rate"
    )
    if rows:
        # the client decides what the step's times hold: its size is said beside them
        # (a column only where some step recorded it: runs stored before had no such labels)
        if client := fixed_clients(data):
            headers = [*headers, "client"]
            rows = [[*row, client.get((row[0], row[1], row[2]), "–")] for row in rows]
        parts.append("<h3>Throughput at a fixed offered rate (httperf, one step)</h3>")
        parts.append(str(html.scroll(str(html.table(headers, rows)))))
        md += "throughput at a fixed offered rate (httperf):\n" + html.md_table(headers, rows)
        md += "\n"
    wrk_metrics = [
        ("requests_per_s", "req/s"),
        ("latency_p50_ms", "p50"),
        ("latency_p99_ms", "p99"),
        ("latency_p99.9_ms", "p99.9"),
    ]
    headers, rows = _group_table(data, "wrk-max", wrk_metrics, "file_size_kb")
    if rows:
        parts.append("<h3>Closed-loop maximum and latency percentiles (wrk)</h3>")
        parts.append(str(html.scroll(str(html.table(headers, rows)))))
        md += "closed-loop maximum (wrk):\n" + html.md_table(headers, rows) + "\n"
    return _section("Web serving: throughput vs offered rate", parts, md)


@register_section(order=41, name="network")
def network_section(data) -> Section | None:
    if not any(r["suite"] == suites.NETWORK for r in data.samples):
        return None
    parts, md = [], ""
    lat = [
        ("rtt_mean_us", "mean"),
        ("rtt_p50_us", "p50"),
        ("rtt_p99_us", "p99"),
        ("rtt_p99.9_us", "p99.9"),
        ("transactions_per_s", "trans/s"),
    ]
    for tc, title in (("sockperf-tcp-rr", "TCP_RR"), ("sockperf-udp-rr", "UDP_RR")):
        headers, rows = _group_table(data, tc, lat, None)
        if rows:
            parts.append(f"<h3>{title} round-trip time (sockperf ping-pong)</h3>")
            parts.append(str(html.scroll(str(html.table(headers, rows)))))
            md += f"{title} round trip:\n" + html.md_table(headers, rows) + "\n"
    bw = [("throughput", "received"), ("sent", "sent"), ("retransmits", "retransmits")]
    bw_udp = [("throughput", "received"), ("lost_percent", "loss"), ("jitter_ms", "jitter")]
    for tc, metrics in (("iperf3-tcp", bw), ("iperf3-udp", bw_udp)):
        headers, rows = _group_table(data, tc, metrics, None)
        if rows:
            parts.append(f"<h3>{tc} throughput</h3>")
            parts.append(str(html.scroll(str(html.table(headers, rows)))))
            md += f"{tc}:\n" + html.md_table(headers, rows) + "\n"
    if not parts:
        return None
    return _section("Network: bandwidth and round-trip latency", parts, md)
