"""The replication section: for a run of a seed's campaign, each of the paper's findings
beside the quantity measured here, its verdict and the reason (docs/replication.md)."""

from __future__ import annotations

from ...replication import compute, curves, load, table
from .. import svg
from ..data import ReportData
from ..html import Raw, h
from ..sections import Section, register_section


def seed_of(campaign: str) -> load.SeedFindings | None:
    """The seed whose findings this campaign measures, if any."""
    return next((s for s in load.load_all() if campaign in s.campaigns), None)


@register_section(70, "replication")
def replication(data: ReportData) -> Section | None:
    seed = seed_of(str(data.run.get("name") or ""))
    if seed is None:
        return None
    results = compute.evaluate(data, seed.findings)
    rows = "".join(
        "<tr>"
        f"<td>{h(r.finding.figure)}</td><td>{h(r.finding.what)}<br><small>{h(r.cells)}</small></td>"
        f"<td>{h(table.measured(r))}<br><small>{h(r.platform or '–')} · {h(r.run_id)}</small></td>"
        f"<td><b>{h(r.verdict)}</b></td><td>{h(r.reason)}</td>"
        "</tr>"
        for r in results
    )
    body = Raw(
        f"<p>{h(seed.paper)}: {h(table.counts(results))}. Ratios x / base with the run's"
        " paired 95% interval and verdict rule (docs/verdicts.md); analogues and the paper's"
        " numbers in src/virtbench/replication/findings/.</p>"
        "<table><tr><th>paper</th><th>finding</th><th>measured</th><th>verdict</th>"
        f"<th>reason</th></tr>{rows}</table>"
    )
    charts, md = paper_charts(data, curves.load(seed.seed))
    return Section(
        f"Replication of seed {seed.seed}",
        body + Raw(charts),
        table.compact(seed, results, data.run_id) + md,
    )


def paper_charts(data: ReportData, wanted: tuple[curves.Curve, ...]) -> tuple[str, str]:
    """Per curve the paper drew: the ratio measured at each x (whiskers: its 95% interval)
    beside the paper's points (dashed, same colour; whiskers: a range the paper gives).
    A series measured nowhere in this run is named, not drawn. (HTML, Markdown)"""
    by_curve: dict[str, list[curves.Measured]] = {}
    for m in curves.measure(data, wanted):
        by_curve.setdefault(m.curve.id, []).append(m)
    html, md = [], []
    for found in by_curve.values():
        c = found[0].curve
        lines, missing = [], []
        for i, m in enumerate(found):
            if not m.points:
                missing.append(f"{m.series.name} ({m.why})")
                continue
            colour = svg.PALETTE[i % len(svg.PALETTE)]
            here = [(p.x, p.ratio.value, p.ratio.low, p.ratio.high) for p in m.points]
            lines.append(svg.Line(f"here · {m.series.name} ({m.platform})", colour, here))
            lines.append(
                svg.Line(f"paper · {m.series.name}", colour, list(m.series.paper), dashed=True)
            )
            md += [
                f"- {c.figure}, {m.series.name}: "
                + ", ".join(f"{p.x:g}: {p.ratio.value:.3f}" for p in m.points)
                + f" here ({m.platform}, {m.test_case}); paper: {m.series.paper_text}"
            ]
        title = f"{c.figure}: {c.title}"
        note = f"{c.figure}, {c.title}: " + (
            "the paper's points (dashed) beside this run's ratio x / "
            f"{c.base.platform or 'the same platform'} · {c.base.scenario} at each "
            f"{c.x_label} (solid; whiskers: 95% interval, paired over rounds)."
        )
        for m in found:
            if m.points:
                note += f" Paper, {m.series.name}: {m.series.paper_text}."
        if missing:
            note += " Not in this run: " + "; ".join(missing) + "."
        if lines:
            chart = svg.line_chart(title, lines, c.x_label, "ratio x / base", log_x=True)
            html.append(f'<div class="charts">{chart}</div>')
        html.append(f"<p class='note'>{h(note)}</p>")
    if not html:
        return "", ""
    head = "<h3>The paper's points beside the measurement</h3>"
    text = "\n\npaper's points beside the measurement:\n" + "\n".join(md) if md else ""
    return head + "".join(html), text
