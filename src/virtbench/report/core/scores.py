"""Section 60: the geometric mean of ratios to the baseline and seed 004's suite scores."""

from __future__ import annotations

from ...analysis.scores import GeoMean, Seed004Suite
from .. import fmt
from ..data import ReportData
from ..html import Raw, Td, h, md_table, scroll, table
from ..sections import Section, register_section
from ..svg import Bar, bar_chart

GEO_NOTE = (
    "Geometric mean of the ratios to the baseline (primary metric of each test case, target "
    "role; &gt; 1 = better than the baseline). Every test case weighs the same within its "
    "suite, every suite the same in <b>all</b>. The 95% CI reflects measurement noise "
    "(delta method in log space, Student t); the range shows the spread between test cases."
)
SEED_NOTE = (
    "Seed 004 §3.6: test score = mean / max of that test over all configurations "
    "(platform · scenario); total = Σ test scores, lower-is-better (LIB) tests subtracted. "
    "Raw means in brackets. ± is approximate (CI half widths / max, in quadrature)."
)


def _geo_ci(g: GeoMean) -> str:
    if g.low is not None:
        return f"[{fmt.ratio(g.low)}–{fmt.ratio(g.high)}]"
    return f"({g.note})" if g.note else "–"


def geo_html(data: ReportData) -> str:
    rows = []
    for g in data.geomeans:
        cls = "good" if g.low and g.low > 1 else "worse" if g.high and g.high < 1 else ""
        rows.append(
            [
                Td(g.suite, "" if g.suite != "all" else "base"),
                g.scenario,
                g.platform,
                Td(fmt.ratio(g.value), f"num {cls}"),
                Td(_geo_ci(g), "num"),
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
                "overhead %",
                "test cases",
                "ratio range",
            ],
            rows,
        )
    )
    suites = list(dict.fromkeys(g.suite for g in data.geomeans))
    cfgs = list(dict.fromkeys((g.platform, g.scenario) for g in data.geomeans))
    multi = len({s for _, s in cfgs}) > 1
    names = {c: c[0] + (f" · {c[1]}" if multi else "") for c in cfgs}
    bars = {
        (g.suite, names[(g.platform, g.scenario)]): Bar(g.value, g.low, g.high)
        for g in data.geomeans
    }
    series = [(names[c], data.colour(c[0])) for c in cfgs]
    title = f"Geometric mean ratio to {data.baseline} (> 1 = better), 95% CI"
    return out + Raw(bar_chart(title, suites, series, bars, "ratio"))


def seed_html(s: Seed004Suite) -> str:
    multi = len({c[1] for c in s.configs}) > 1
    head = ["test", "order", *[c[0] + (f" · {c[1]}" if multi else "") for c in s.configs]]
    rows = []
    for t in s.tests:
        cells = []
        for c in s.configs:
            v = s.test_scores.get((t, c))
            raw = s.means.get((t, c))
            text = "–" if v is None else f"{v:.2f}" + (f" ({fmt.num(raw)})" if raw else "")
            cells.append(Td(text, "num"))
        tc, _metric, dims = t  # type: ignore[misc]
        label = tc + (f" [{fmt.dims(dims)}]" if dims else "")
        rows.append([label, "HIB" if s.hib[t] else "LIB", *cells])
    total = []
    for c in s.configs:
        tt = s.totals[c]
        text = f"{tt.total:.2f}" + (f" ± {tt.ci_half:.2f}" if tt.ci_half is not None else "")
        text += f" (missing {len(tt.missing)})" if tt.missing else ""
        total.append(Td(text, "num bad" if tt.missing else "num", "; ".join(tt.missing)))
    rows.append([Raw("<b>total score</b>"), "", *total])
    return Raw(f"<h3>{h(s.suite)}</h3>") + scroll(table(head, rows))


def _md_total(s: Seed004Suite, c) -> str:
    t = s.totals.get(c)
    if t is None:
        return "–"
    return f"{t.total:.2f}" + (f" (missing {', '.join(t.missing)})" if t.missing else "")


@register_section(60, "scores")
def scores_section(data: ReportData) -> Section | None:
    if not data.seed004 and not data.geomeans:
        return None
    body, md = Raw(""), ["## scores", ""]
    if data.geomeans:
        body += Raw("<h3>Geometric mean of ratios to the baseline</h3>") + geo_html(data)
        md.append(
            md_table(
                ["suite", "platform · scenario", "geomean ratio [95% CI]", "overhead", "missing"],
                [
                    [
                        g.suite,
                        f"{g.platform} · {g.scenario}",
                        f"{fmt.ratio(g.value)} {_geo_ci(g)}",
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
        body += Raw(f'<h3>Seed 004 scores</h3><p class="note">{SEED_NOTE}</p>')
        body += Raw("".join(seed_html(s) for s in data.seed004))
        cfgs = list(dict.fromkeys(c for s in data.seed004 for c in s.configs))
        md.append("\nseed 004 total scores (Σ test scores, LIB subtracted):\n")
        md.append(
            md_table(
                ["suite", *[f"{p} · {sc}" for p, sc in cfgs]],
                [[s.suite, *[_md_total(s, c) for c in cfgs]] for s in data.seed004],
            )
        )
    return Section("Scores", body, "\n".join(md))
