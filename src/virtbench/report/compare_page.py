"""`virtbench compare` output: the same comparison as JSON (for scripts), Markdown (for the
terminal) and one self-contained HTML page (report/html.py's blocks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import safefs
from ..analysis.compare import BETWEEN_RUNS, VERDICTS, Outcome, Settings, counts
from ..analysis.fingerprint import Gate
from ..analysis.groups import Group
from ..errors import VirtbenchError
from . import fmt
from .core.results import BADGE_CLASS, mean_cell, test_cell
from .html import Raw, Td, badge, breakable, h, kv_table, md_table, page, scroll, table, together

METHOD = {
    "ratio": "geometric mean(B) / geometric mean(A)",
    "ratio_ci": "Student t on log(B/A): paired over rounds within one run, Welch across runs",
    "test": "the same t on log(B/A); Holm's correction over the test cases compared",
    "floor": "the test's A/A floor measured on this host where one exists, else the threshold",
    "verdict": "faster/slower: CI beyond the floor and Holm p < alpha; same: CI within it",
}


@dataclass(frozen=True)
class Side:
    run_id: str
    campaign: str
    store: str
    platform: str | None  # None: every platform, matched by name


@dataclass
class CompareDoc:
    a: Side
    b: Side
    settings: Settings
    outcomes: list[Outcome]
    only_a: list[Group] = field(default_factory=list)
    only_b: list[Group] = field(default_factory=list)
    gate: Gate | None = None  # None: one run against itself (one host)

    @property
    def counts(self) -> dict[str, int]:
        return counts(self.outcomes)


def _side(s: Side) -> dict[str, Any]:
    return {"run_id": s.run_id, "campaign": s.campaign, "store": s.store, "platform": s.platform}


def _group_name(g: Group) -> dict[str, Any]:
    k = g.key
    return {
        "test_case": k.test_case,
        "metric": k.metric,
        "dims": dict(k.dims),
        "scenario": k.scenario,
        "platform": k.platform,
    }


def _outcome(o: Outcome) -> dict[str, Any]:
    def summary(s: Any) -> dict[str, Any]:
        return {"n": s.n, "mean": s.mean, "stdev": s.stdev, "cv": s.cv, "ci_half": s.ci_half}

    return {
        "suite": o.suite,
        "test_case": o.test_case,
        "metric": o.metric,
        "dims": dict(o.dims),
        "scenario": o.scenario,
        "platform_a": o.platform_a,
        "platform_b": o.platform_b,
        "unit": o.unit,
        "higher_is_better": o.higher_is_better,
        "a": summary(o.a),
        "b": summary(o.b),
        "ratio": o.ratio,
        "ratio_ci": list(o.ratio_ci) if o.ratio_ci else None,
        "change_pct": o.change_pct,
        "p": o.p,
        "p_holm": o.p_holm,
        "interval": o.method,
        "floor_pct": o.floor * 100.0,
        "floor_source": o.floor_source or "threshold",
        "verdict": o.verdict,
        "reason": o.reason,
    }


def to_json(doc: CompareDoc) -> dict[str, Any]:
    gate = doc.gate
    return {
        "a": _side(doc.a),
        "b": _side(doc.b),
        "method": METHOD
        | {
            "alpha": doc.settings.alpha,
            "confidence": doc.settings.confidence,
            "threshold_pct": doc.settings.threshold * 100.0,
        },
        "between_runs": _between(doc),
        "comparable": gate is None or gate.comparable,
        "fingerprint": None
        if gate is None
        else {
            "differences": [
                {"key": d.key, "a": d.a, "b": d.b, "matters": d.matters} for d in gate.differences
            ],
            "unknown": gate.unknown,
        },
        "counts": doc.counts,
        "results": [_outcome(o) for o in doc.outcomes],
        "only_in_a": [_group_name(g) for g in doc.only_a],
        "only_in_b": [_group_name(g) for g in doc.only_b],
    }


def _title(doc: CompareDoc) -> str:
    def one(s: Side) -> str:
        return s.run_id + (f" · {s.platform}" if s.platform else "")

    return f"virtbench compare: A = {one(doc.a)}  vs  B = {one(doc.b)}"


def _test(o: Outcome) -> str:
    return fmt.test(o.test_case, o.dims)


def _platforms(o: Outcome) -> str:
    return o.platform_a if o.platform_a == o.platform_b else f"{o.platform_a} → {o.platform_b}"


def _platform_parts(o: Outcome) -> tuple[str, ...]:
    """`_platforms` in the pieces a narrow cell may wrap between."""
    if o.platform_a == o.platform_b:
        return (o.platform_a,)
    return (f"{o.platform_a} →", o.platform_b)


def _ratio_text(o: Outcome) -> str:
    if o.ratio is None:
        return "–"
    ci = f" [{fmt.ratio(o.ratio_ci[0])}, {fmt.ratio(o.ratio_ci[1])}]" if o.ratio_ci else ""
    return fmt.ratio(o.ratio) + ci


def _p_text(o: Outcome) -> str:
    if o.p_holm is None:
        return "–"
    return f"{o.p_holm:.3g}"


def _between(doc: CompareDoc) -> str | None:
    """The note two separate runs need (None: two platforms of one run)."""
    return None if doc.gate is None else BETWEEN_RUNS


def _direction(o: Outcome) -> str:
    return f"{o.metric} ({o.unit}, {'higher' if o.higher_is_better else 'lower'} is better)"


def _gate_lines(gate: Gate | None) -> list[str]:
    if gate is None:
        return []
    lines = []
    if not gate.comparable:
        lines.append("WARNING: the hosts differ in what moves figures:")
    lines += [f"- {d.text}" for d in gate.mattering]
    notes = [d for d in gate.differences if not d.matters]
    lines += [f"- (note) {d.text}" for d in notes]
    lines += [f"- (unknown) {u}" for u in gate.unknown]
    return lines


def gate_warning(gate: Gate | None) -> list[str]:
    """The lines a terminal warning shows (empty when comparable)."""
    return [] if gate is None or gate.comparable else _gate_lines(gate)


def markdown(doc: CompareDoc) -> str:
    s = doc.settings
    parts = [f"# {_title(doc)}"]
    c = doc.counts
    parts.append(
        ", ".join(f"{c[v]} {v}" for v in VERDICTS)
        + f" (faster/slower = B against A in the metric's own direction; floor: measured"
        f" A/A floor, else {s.threshold * 100:g}%; alpha {s.alpha:g}, Holm-corrected)"
    )
    if _between(doc):
        parts.append(f"Note: {_between(doc)}.")
    if doc.gate is not None and (doc.gate.differences or doc.gate.unknown):
        parts.append("## Comparability\n\n" + "\n".join(_gate_lines(doc.gate)))
    rows = [
        [
            _test(o),
            _direction(o),
            o.scenario,
            _platforms(o),
            f"{o.a.n}/{o.b.n}",
            fmt.num(o.a.mean),
            fmt.num(o.b.mean),
            _ratio_text(o),
            _p_text(o),
            o.verdict,
            o.reason,
        ]
        for o in doc.outcomes
    ]
    headers = ["test case", "metric", "scenario", "platform", "n A/B", "mean A", "mean B"]
    headers += ["B/A [95% CI]", "p (Holm)", "verdict", "why"]
    parts.append(md_table(headers, rows) if rows else "no test case measured on both sides")
    for label, groups in (("only in A", doc.only_a), ("only in B", doc.only_b)):
        if groups:
            names = sorted(
                {f"{g.key.test_case} ({g.key.platform}, {g.key.scenario})" for g in groups}
            )
            parts.append(f"{label}: " + ", ".join(names))
    return "\n\n".join(parts)


def html(doc: CompareDoc) -> str:
    s = doc.settings
    body = kv_table(
        [
            ("A", f"{doc.a.run_id} ({doc.a.campaign}) in {doc.a.store}"),
            ("B", f"{doc.b.run_id} ({doc.b.campaign}) in {doc.b.store}"),
            ("verdicts", ", ".join(f"{n} {v}" for v, n in doc.counts.items())),
            ("threshold / alpha", f"{s.threshold * 100:g}% / {s.alpha:g}"),
            *((("between runs", b),) if (b := _between(doc)) else ()),
            *((k.replace("_", " "), v) for k, v in METHOD.items()),
        ]
    )
    nav = [("results", "Results")]
    if doc.gate is not None:
        nav.insert(0, ("host", "Comparability"))
        rows = [
            [d.key, str(d.a), str(d.b), Raw(badge("matters", "bad") if d.matters else "note")]
            for d in doc.gate.differences
        ]
        gate_html = table(["fact", "A", "B", ""], rows) if rows else Raw("<p>same host facts</p>")
        if doc.gate.unknown:
            gate_html += Raw(
                "<ul>" + "".join(f"<li>{h(u)}</li>" for u in doc.gate.unknown) + "</ul>"
            )
        body += Raw(f'<section id="host"><h2>Comparability</h2>{gate_html}</section>')
    body += Raw(
        f'<section id="results"><h2>Results</h2>{common_line(doc.outcomes)}'
        f"{scroll(results_table(doc.outcomes))}</section>"
    )
    subtitle = "faster / slower: B against A in the metric's own direction"
    return page(_title(doc), nav, body, subtitle)


RESULT_HEADERS = [
    "test case",
    Raw('metric <small title="↑ higher is better, ↓ lower is better">↑↓</small>'),
    "platform · scenario",
    "n A/B",
    "A: mean ± 95% CI half-width",
    "B: mean ± 95% CI half-width",
    "B/A [95% CI]",
    "p (Holm)",
    "verdict: why",
]


def _where(o: Outcome) -> str:
    return f"{_platforms(o)} · {o.scenario}"


def common_line(outcomes: list[Outcome]) -> Raw:
    """The platforms and scenario, said once above the table when every row shares them."""
    where = {_where(o) for o in outcomes}
    if len(where) != 1:
        return Raw("")
    return Raw(f'<p class="note">Every row: {h(where.pop())}.</p>')


def results_table(outcomes: list[Outcome]) -> Raw:
    """One row per test case compared, narrow enough for a 1,024 px window: the metric's
    unit goes with its means (wrapping below them), the verdict's reason sits beside its
    badge in a column that keeps a readable width (CSS td.why), and the platforms and
    scenario get a column only when rows differ in them (else `common_line` says them)."""
    varied = len({_where(o) for o in outcomes}) > 1
    rows = [
        [
            test_cell(o.test_case, o.dims),
            Td(
                Raw(breakable(o.metric) + ("\u00a0↑" if o.higher_is_better else "\u00a0↓")),
                "metric",
                _direction(o),
            ),
            *([together(*_platform_parts(o), f"· {o.scenario}")] if varied else []),
            Td(f"{o.a.n}/{o.b.n}", "num"),
            mean_cell(o.a.mean, o.a.ci_half, o.unit),
            mean_cell(o.b.mean, o.b.ci_half, o.unit),
            Td(_ratio_html(o), "num wrap"),
            Td(_p_text(o), "num"),
            Td(Raw(badge(o.verdict, BADGE_CLASS[o.verdict]) + " " + h(o.reason)), "why"),
        ]
        for o in outcomes
    ]
    headers = [x for x in RESULT_HEADERS if varied or x != "platform · scenario"]
    return table(headers, rows)


def _ratio_html(o: Outcome) -> Raw:
    """The ratio, its interval on a second line (as the run report shows a ratio)."""
    if o.ratio is None or not o.ratio_ci:
        return Raw(h(fmt.ratio(o.ratio)))
    ci = together(f"[{fmt.ratio(o.ratio_ci[0])},", f"{fmt.ratio(o.ratio_ci[1])}]")
    return Raw(f"{h(fmt.ratio(o.ratio))}<br><small>{ci}</small>")


def write_html(doc: CompareDoc, path: Path) -> None:
    try:
        safefs.write_file(Path(path), html(doc), mode=0o644, kind="report")
    except OSError as exc:
        raise VirtbenchError(f"cannot write {path}: {exc.strerror or exc}") from exc
