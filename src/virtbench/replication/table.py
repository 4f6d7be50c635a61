"""A seed's replication table as Markdown or JSON (the CLI and the report section)."""

from __future__ import annotations

import json
from collections import Counter

from .compute import Result
from .model import SeedFindings
from .verdict import OUTCOMES, pct


def measured(r: Result) -> str:
    if r.ratio is None:
        return "–"
    q = r.ratio
    ci = "no CI" if q.low is None or q.high is None else f"95% CI {pct(q.low)}..{pct(q.high)}"
    return f"{pct(q.value)} ({ci})"


def counts(results: list[Result]) -> str:
    c = Counter(r.verdict for r in results)
    return ", ".join(f"{c[o]} {o}" for o in OUTCOMES if c[o])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(seed: SeedFindings, results: list[Result], run_id: str) -> str:
    lines = [
        f"## replication of seed {seed.seed}: {seed.paper}",
        "",
        f"run {run_id}: {counts(results)}",
        "",
        "| paper | finding | measured (run) | verdict | reason |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        f = r.finding
        where = f"{r.platform or '–'}: {r.cells}" if r.cells else (r.platform or "–")
        lines.append(
            f"| {_cell(f.figure)} | {_cell(f.what)} | {_cell(measured(r))}, {_cell(where)} "
            f"({r.run_id}) | **{r.verdict}** | {_cell(r.reason)} |"
        )
    return "\n".join(lines) + "\n"


def compact(seed: SeedFindings, results: list[Result], run_id: str) -> str:
    """The report's terminal summary: figure, measured, verdict (reasons: `replicate`)."""
    lines = [f"## replication of seed {seed.seed}: {counts(results)}", ""]
    lines += [
        f"- {r.finding.figure}, {r.finding.what}: {measured(r)}: {r.verdict}" for r in results
    ]
    lines += ["", f"reasons: virtbench replicate {seed.seed} --run {run_id}"]
    return "\n".join(lines)


def as_json(seed: SeedFindings, results: list[Result], run_id: str) -> str:
    doc = {
        "seed": seed.seed,
        "paper": seed.paper,
        "run_id": run_id,
        "counts": dict(Counter(r.verdict for r in results)),
        "findings": [r.as_dict() for r in results],
    }
    return json.dumps(doc, indent=2) + "\n"
