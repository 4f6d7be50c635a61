"""Section 60: the geometric mean of ratios to the baseline and seed 004's suite scores."""

from __future__ import annotations

from ...analysis import platform_facts, plausibility
from ...analysis.scores import GeoMean, Seed004Suite
from .. import fmt
from ..data import ReportData
from ..html import Raw, Td, h, md_table, scroll, table
from ..sections import Section, register_section
from ..svg import Bar, bar_chart
from .results import VERDICT_CLASS, verdict_badge

GEO_NOTE = (
    "Geometric mean of the ratios to the baseline (primary metric of each test case, target "
    "role; &gt; 1 = better than the baseline). Every test case weighs the same within its "
    "suite, every workload suite the same in <b>all</b> (its row names the suites it is "
    "over). A suite that measures a cost of creating the isolation (start-up, boot) is shown "
    "<i>beside</i> <b>all</b>, never inside it: it is not a slowdown of the workload. "
    "The 95% CI is taken over the run's rounds (per round, the weighted mean of the test "
    "cases' log ratios; Student t over the rounds), so a burst that slowed one round widens "
    "it. Verdict: <b>faster</b>/<b>slower</b> when the whole CI lies beyond the noise floor "
    "(±2%, or the test cases' measured A/A floors), <b>same</b> when it lies within it, "
    "<b>undecided</b> otherwise. The range shows the spread between test cases."
)
SEED_NOTE = (
    "Seed 004 §3.6: test score = mean / max of that test over all configurations "
    "(platform · scenario); total = Σ test scores of HIB tests − Σ test scores of LIB tests. "
    "The <b>max</b> column holds each test's maximum and where it was measured; hover a total "
    "for its terms. Raw means in brackets. ± is approximate (CI half widths / max, in "
    "quadrature). Invalid samples never enter a mean, so never a maximum or a total."
)


def _geo_suite(g: GeoMean) -> str:
    if g.suite == "all" and g.contains:
        return "all: " + ", ".join(g.contains)
    return g.suite + (" (start-up cost, beside all)" if g.beside else "")


def _chart_suite(g: GeoMean) -> str:
    return g.suite + (" (not in all)" if g.beside else "")


def _geo_ci(g: GeoMean) -> str:
    if g.low is not None:
        return f"[{fmt.ratio(g.low)}–{fmt.ratio(g.high)}]"
    return f"({g.note})" if g.note else "–"


def geo_html(data: ReportData) -> str:
    rows = []
    for g in data.geomeans:
        cls = VERDICT_CLASS.get(g.decision, "")
        rows.append(
            [
                Td(_geo_suite(g), "" if g.suite != "all" else "base"),
                g.scenario,
                g.platform,
                Td(fmt.ratio(g.value), f"num {cls}"),
                Td(_geo_ci(g), "num"),
                Td(Raw(verdict_badge(g.verdict)) if g.verdict else "–", ""),
                Td(fmt.signed_pct(g.overhead_pct), f"num {cls}"),
                Td(
                    str(g.n_tests) + (f" (missing {len(g.missing)})" if g.missing else ""),
                    "num bad" if g.missing else "num",
                    "no valid ratio for: " + ", ".join(g.missing) if g.missing else "",
                ),
                Td(f"{fmt.ratio(g.ratio_min)} – {fmt.ratio(g.ratio_max)}", "num"),
            ]
        )
    out = Raw(f'<p class="note">{GEO_NOTE}</p>') + scroll(
        table(
            [
                "suite",
                "scenario",
                "platform",
                "geomean ratio",
                "95% CI",
                "verdict",
                "overhead %",
                "test cases",
                "ratio range",
            ],
            rows,
        )
    )
    suites = list(dict.fromkeys(_chart_suite(g) for g in data.geomeans))
    cfgs = list(dict.fromkeys((g.platform, g.scenario) for g in data.geomeans))
    multi = len({s for _, s in cfgs}) > 1
    names = {c: c[0] + (f" · {c[1]}" if multi else "") for c in cfgs}
    bars = {
        (_chart_suite(g), names[(g.platform, g.scenario)]): Bar(g.value, g.low, g.high)
        for g in data.geomeans
    }
    series = [(names[c], data.colour(c[0])) for c in cfgs]
    title = f"Geometric mean ratio to {data.baseline} (> 1 = better), 95% CI"
    return out + Raw(bar_chart(title, suites, series, bars, "ratio"))


def _score_cell(s: Seed004Suite, t, c) -> Td:
    v, raw = s.test_scores.get((t, c)), s.means.get((t, c))
    bad = s.excluded.get((t, c), [])
    text = "–" if v is None else f"{v:.2f}" + (f" ({fmt.num(raw)})" if raw else "")
    if bad:
        text = ("invalid" if v is None else text) + f" ⚠ {len(bad)} excluded"
        return Td(text, "num bad", "left out as invalid: " + _reasons(bad))
    return Td(text, "num")


def _terms(s: Seed004Suite, c) -> str:
    """The total's formula with its numbers: +HIB scores, −LIB scores."""
    terms = [
        ("+" if s.hib[t] else "−") + f"{s.test_scores[(t, c)]:.2f}"
        for t in s.tests
        if (t, c) in s.test_scores
    ]
    return " ".join(terms) + f" = {s.totals[c].total:.2f}"


def _cfg_name(c, multi: bool) -> str:
    return c[0] + (f" · {c[1]}" if multi else "")


def seed_html(s: Seed004Suite) -> str:
    multi = len({c[1] for c in s.configs}) > 1
    head = ["test", "order", "max (where)", *[_cfg_name(c, multi) for c in s.configs]]
    rows = []
    for t in s.tests:
        tc, _metric, dims = t  # type: ignore[misc]
        label = fmt.test(tc, dims)
        top = s.maxima.get(t)
        where = f"{fmt.num(top[0])} ({_cfg_name(top[1], multi)})" if top else "–"
        cells = [_score_cell(s, t, c) for c in s.configs]
        rows.append([label, "HIB" if s.hib[t] else "LIB", Td(where, "num"), *cells])
    total = []
    for c in s.configs:
        tt = s.totals[c]
        text = f"{tt.total:.2f}" + (f" ± {tt.ci_half:.2f}" if tt.ci_half is not None else "")
        text += f" (missing {len(tt.missing)})" if tt.missing else ""
        title = _terms(s, c) + (" | missing: " + "; ".join(tt.missing) if tt.missing else "")
        total.append(Td(text, "num bad" if tt.missing else "num", title))
    n_hib = sum(1 for t in s.tests if s.hib[t])
    rows.append([Raw("<b>total score</b>"), f"{n_hib} HIB, {len(s.tests) - n_hib} LIB", "", *total])
    return Raw(f"<h3>{h(s.suite)}</h3>") + scroll(table(head, rows)) + _excluded_html(s)


def _excluded_html(s: Seed004Suite) -> str:
    if not s.excluded:
        return ""
    multi = len({c[1] for c in s.configs}) > 1
    items = "".join(
        f"<li>{h(_cfg_name(c, multi))} · {h(_test_name(t))}: {len(reasons)}"
        f" samples — {h(_reasons(reasons))}</li>"
        for (t, c), reasons in s.excluded.items()
    )
    return Raw(
        f'<p class="note">{h(s.suite)}: invalid samples left out of this score (not in any'
        f' mean, never a maximum):</p><ul class="note">{items}</ul>'
    )


def _reasons(reasons: list[str]) -> str:
    """The first reason in full; the others usually differ only in the figure they quote."""
    rest = len(set(reasons)) - 1
    return reasons[0] + (f" (+{rest} more like it)" if rest else "")


def _unscored(data: ReportData) -> list[str]:
    return [x for x in data.suites if not data.description.scoring_of(x).seed004]


def _unchecked(data: ReportData) -> str:
    tcs = plausibility.unchecked(
        data.samples,
        data.description,
        plausibility.ceilings(data.host),
        platform_facts.host_device(data.host),
    )
    if not tcs:
        return ""
    return (
        f" O_DIRECT figures of {', '.join(tcs)} were not checked against the host's device:"
        " the run has no disk ceiling for them and no native platform measured them (add"
        " one, or run `virtbench calibrate --disk`, to check them)."
    )


def _test_name(t) -> str:
    tc, _metric, dims = t
    return fmt.test(tc, dims)


def _md_total(s: Seed004Suite, c) -> str:
    t = s.totals.get(c)
    if t is None:
        return "–"
    return f"{t.total:.2f}" + (f" (missing {', '.join(t.missing)})" if t.missing else "")


def _md_seed_notes(data: ReportData) -> list[str]:
    """How each total is formed, what it left out and which suites get none. Runs stored
    before suites carried their scoring flags print as they always did."""
    if not data.description.scoring:
        return []
    lines = ["", "total = Σ HIB test scores − Σ LIB test scores; test score = mean / max:"]
    for s in data.seed004:
        n_hib = sum(1 for t in s.tests if s.hib[t])
        maxima = "; ".join(
            f"{_test_name(t)} {fmt.num(v)} ({p} · {sc})" for t, (v, (p, sc)) in s.maxima.items()
        )
        lines.append(f"- {s.suite}: {n_hib} HIB + {len(s.tests) - n_hib} LIB tests; max: {maxima}")
        lines += [
            f"  - left out as invalid: {c[0]} · {c[1]} · {_test_name(t)}: {len(r)} samples ({r[0]})"
            for (t, c), r in s.excluded.items()
        ]
    unscored = _unscored(data)
    if unscored:
        lines.append(f"- no total for {', '.join(unscored)}: seed 004 does not score such a suite")
    unchecked = _unchecked(data)
    return lines + ([f"-{unchecked}"] if unchecked else [])


def _md_suite(data: ReportData, g: GeoMean) -> str:
    return _geo_suite(g) if data.description.scoring else g.suite


@register_section(12, "scores")
def scores_section(data: ReportData) -> Section | None:
    if not data.seed004 and not data.geomeans:
        return None
    body, md = Raw(""), ["## scores", ""]
    if data.geomeans:
        body += Raw("<h3>Geometric mean of ratios to the baseline</h3>") + geo_html(data)
        md.append(
            md_table(
                [
                    "suite",
                    "platform · scenario",
                    "geomean ratio [95% CI]",
                    "verdict",
                    "overhead",
                    "missing",
                ],
                [
                    [
                        _md_suite(data, g),
                        f"{g.platform} · {g.scenario}",
                        f"{fmt.ratio(g.value)} {_geo_ci(g)}",
                        g.decision,
                        fmt.signed_pct(g.overhead_pct),
                        ", ".join(g.missing) or "–",
                    ]
                    for g in data.geomeans
                ],
            )
        )
    elif not data.baseline:
        body += Raw('<p class="note">No baseline platform in the campaign: no ratios.</p>')
    if data.seed004:
        unscored = _unscored(data)
        skipped = (
            f" No total for {', '.join(unscored)}: seed 004 does not score such a suite."
            if unscored
            else ""
        )
        skipped += _unchecked(data)
        body += Raw(f'<h3>Seed 004 scores</h3><p class="note">{SEED_NOTE}{h(skipped)}</p>')
        body += Raw("".join(seed_html(s) for s in data.seed004))
        cfgs = list(dict.fromkeys(c for s in data.seed004 for c in s.configs))
        md.append("\nseed 004 total scores (Σ test scores, LIB subtracted):\n")
        md.append(
            md_table(
                ["suite", *[f"{p} · {sc}" for p, sc in cfgs]],
                [[s.suite, *[_md_total(s, c) for c in cfgs]] for s in data.seed004],
            )
        )
        md += _md_seed_notes(data)
    return Section("Scores", body, "\n".join(md))
