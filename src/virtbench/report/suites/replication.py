"""The replication section: for a run of a seed's campaign, each of the paper's findings
beside the quantity measured here, its verdict and the reason (docs/replication.md)."""

from __future__ import annotations

from ...replication import compute, load, table
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
    return Section(
        f"Replication of seed {seed.seed}", body, table.compact(seed, results, data.run_id)
    )
