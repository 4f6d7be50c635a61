"""Section 30: one section per suite — table (mean ± CI, CV, n, ratio, overhead) and bar
charts with error bars of every test case's primary metric per platform."""

from __future__ import annotations

from ... import labelkeys
from ...analysis import normalize
from ...analysis.colocation import BESIDE_LABEL, UNPAIRED
from ...analysis.groups import Group
from ...analysis.normalize import OWN_PEAK, Comparison
from ...analysis.ratios import FASTER, SAME, SLOWER, UNDECIDED, Verdict
from ...analysis.stats import HIGH_CV
from .. import fmt
from ..data import ReportData
from ..html import Raw, Td, badge, breakable, details, h, md_table, scroll, table, together
from ..sections import Section, register_section
from ..svg import Bar, bar_chart
from .invalid import causes

MAX_BARS_GROUPS = 12  # more x groups than this (a sweep) is a curve, not a bar chart
MD_ROWS_PER_TEST = 6  # terminal summary: rows per test case before "+N more"

HEADERS = [
    "test case",
    "metric",
    "scenario",
    "platform",
    "n",
    "mean ± 95% CI half-width",  # the CI of the mean, Student t over the valid repetitions
    "median",
    "CV",
    "min – max",
    # lower-is-better: baseline / value, so > 1 = better in every row (the page's legend);
    # the verdict: analysis/ratios.py
    "ratio to baseline [95% CI], verdict",
    "overhead % [95% CI]",
]


def describe_test(g: Group, digests: bool = True) -> str:
    return fmt.test(g.key.test_case, g.key.dims, digests)


def test_cell(test_case: str, dims: tuple[tuple[str, object], ...], digests: bool = True) -> Td:
    """A test case name on one line, its dimensions wrapping below it in a narrow window."""
    shown = fmt.dims(dims, digests)
    return Td(together(test_case, f"[{shown}]" if shown else ""), "test")


def mean_cell(mean: float | None, half: float | None, unit: str) -> Td:
    """mean ± CI half-width on one line, its unit wrapping below it in a narrow window."""
    if mean is None:
        return Td("–", "num")
    return Td(together(fmt.mean_ci(mean, half), unit), "num wrap")


def digests_needed(gs: list[Group]) -> bool:
    """Whether two rows of a table of `gs` would read the same without the digests of their
    dict and list labels (fmt.dims): a co-location neighbour's client rows are told apart by
    client_of, platform and scenario, and 3 digests a row only widened the table."""
    seen = {
        (describe_test(g, False), g.key.metric, g.key.scenario, g.key.platform, g.key.role)
        for g in gs
    }
    return len(seen) < len(gs)


def n_cell(g: Group) -> Td | Raw:
    text = str(g.summary.n)
    if g.n_invalid:
        # one reason per cause, its varying numbers as a range: every distinct reason of a
        # co-location step swelled the report's titles (docs/code-measurements.md)
        reasons = "; ".join(sorted(c.reason() for c in causes([g])))
        return Td(Raw(text + badge(f"+{g.n_invalid} invalid", "bad", reasons)), "num bad")
    if g.summary.n < 2:
        return Td(Raw(text + badge("no CI", "warn", "fewer than 2 valid samples")), "num")
    return Td(text, "num")


def ratio_cells(data: ReportData, g: Group) -> list[Td]:
    c = data.comparisons.get(g.key)
    if g.key.platform == data.baseline:
        return [Td("baseline", "num base"), Td("", "num base")]
    if c is None:
        if why := data.incomparable.get(g.key):  # measured over another network path
            # the reason once, on the badge: repeated on the cell too it swelled a co-location
            # report (every vm row of every step); path_note lists it in full
            return [Td(Raw(badge("not comparable", "warn", why)), "num"), Td("–", "num")]
        return [Td("–", "num"), Td("–", "num")]
    # colour only differences the verdict calls (interval beyond the noise floor)
    cls = VERDICT_CLASS.get(c.decision, "")
    ratio = Raw(h(fmt.ratio(c.ratio)) + decision_badge(c))
    # a lower-is-better ratio is baseline / value, so that > 1 reads "better" in every row
    how = (
        "value / baseline"
        if c.higher_is_better
        else f"baseline / value (lower is better): the value is {fmt.ratio(1 / c.ratio)}× "
        "the baseline"
    )
    oh_text = Raw(h(fmt.signed_pct(c.overhead_pct)))
    # an interval may wrap after its first bound in a narrow window (as a value may
    # before its badge): the table then fits 1,024 px
    if c.ratio_low is not None:
        lo_hi = together(f"[{fmt.ratio(c.ratio_low)} –", f"{fmt.ratio(c.ratio_high)}]")
        ratio = Raw(ratio + f"<br><small>{lo_hi}</small>")
    oh = c.overhead_range
    if oh:
        span = together(f"[{fmt.signed_pct(oh[0])} …", f"{fmt.signed_pct(oh[1])}]")
        oh_text = Raw(oh_text + f"<br><small>{span}</small>")
    return [Td(ratio, f"num wrap {cls}", how), Td(oh_text, f"num wrap {cls}")]


VERDICT_CLASS = {FASTER: "good", SLOWER: "worse"}
BADGE_CLASS = {FASTER: "good", SLOWER: "bad", SAME: "same", UNDECIDED: "warn"}


def verdict_badge(v: Verdict) -> str:
    """The verdict word, its reason on hover: one vocabulary for every ratio."""
    return badge(v.outcome, BADGE_CLASS[v.outcome], v.reason)


def decision_badge(c: Comparison) -> str:
    return verdict_badge(c.verdict)


def md_ratio(c: Comparison) -> str:
    """The ratio as the terminal summary prints it, with its verdict."""
    return f"(×{c.ratio:.3f}, {c.decision})"


def group_row(data: ReportData, g: Group, digests: bool = True) -> list:
    s = g.summary
    cv = s.cv
    cv_td = Td(
        Raw(fmt.pct(cv) + (badge("high CV", "warn") if s.noisy else "")),
        "num noisy" if s.noisy else "num",
        f"coefficient of variation above {HIGH_CV:.0%}: noisy" if s.noisy else "",
    )
    direction = "higher is better" if g.higher_is_better else "lower is better"
    return [
        test_cell(g.key.test_case, g.key.dims, digests),
        Td(
            Raw(breakable(g.key.metric) + ("\u00a0↑" if g.higher_is_better else "\u00a0↓")),
            "metric",
            f"{g.unit}, {direction}",
        ),
        g.key.scenario,
        g.key.platform if g.key.role == "target" else f"{g.key.platform} · {g.key.role}",
        n_cell(g),
        mean_cell(s.mean, s.ci_half, g.unit),
        Td(fmt.num(s.median), "num"),
        cv_td,
        Td(
            "–" if s.minimum is None else together(f"{fmt.num(s.minimum)} –", fmt.num(s.maximum)),
            "num wrap",
        ),
        *ratio_cells(data, g),
    ]


def test_chart(data: ReportData, gs: list[Group]) -> str | None:
    """Bars per platform, grouped by scenario (and dimension labels), for one test case."""
    xs = list(dict.fromkeys((g.key.scenario, fmt.dims(g.key.dims)) for g in gs))
    if len(xs) > MAX_BARS_GROUPS:
        return None
    one_scenario = len({x[0] for x in xs}) == 1 and any(x[1] for x in xs)
    names = {x: " · ".join(p for p in (x[1:] if one_scenario else x) if p) for x in xs}
    bars = {}
    for g in gs:
        s = g.summary
        note = f"n={s.n}" + (f", CV {fmt.pct(s.cv)}" if s.cv is not None else "")
        note += f", {g.n_invalid} invalid" if g.n_invalid else ""
        bars[(names[(g.key.scenario, fmt.dims(g.key.dims))], g.key.platform)] = Bar(
            s.mean, s.ci_low, s.ci_high, note, warn=s.noisy or bool(g.n_invalid)
        )
    series = [(p, data.colour(p)) for p in data.platforms if any(g.key.platform == p for g in gs)]
    g0 = gs[0]
    direction = "higher is better" if g0.higher_is_better else "lower is better"
    title = f"{g0.key.test_case}: {g0.key.metric} ({direction}), mean with 95% CI"
    return bar_chart(title, list(names.values()), series, bars, g0.unit)


def md_summary(data: ReportData, suite: str, gs: list[Group]) -> str:
    """Platform columns, one row per test (and scenario): mean ± CI (×ratio)."""
    platforms = [p for p in data.platforms if any(g.key.platform == p for g in gs)]
    rows: dict[tuple, dict[str, str]] = {}
    label: dict[tuple, str] = {}
    ratios = paths = False
    for g in gs:
        k = (g.key.test_case, g.key.dims, g.key.scenario)
        label[k] = describe_test(g) + (f" · {g.key.scenario}" if g.key.scenario != "solo" else "")
        s = g.summary
        text = fmt.mean_ci(s.mean, s.ci_half) if s.mean is not None else "no valid sample"
        c = data.comparisons.get(g.key)
        if c is not None and g.key.platform != data.baseline:
            text += f" {md_ratio(c)}"
            ratios = True
        elif g.key in data.incomparable:
            own = data.incomparable[g.key].startswith(OWN_PEAK)
            text += f" (no ratio: {OWN_PEAK if own else 'other net_path'})"
            paths = paths or not own
        text += " ⚠CV" if s.noisy else ""
        text += f" +{g.n_invalid} invalid" if g.n_invalid else ""
        rows.setdefault(k, {})[g.key.platform] = text
    out, per_test = [], {}
    for k in rows:
        per_test[k[0]] = per_test.get(k[0], 0) + 1
        if per_test[k[0]] <= MD_ROWS_PER_TEST:
            out.append([label[k], *[rows[k].get(p, "–") for p in platforms]])
    more = {t: n - MD_ROWS_PER_TEST for t, n in per_test.items() if n > MD_ROWS_PER_TEST}
    unit = {g.key.test_case: f"{g.unit}, {'HIB' if g.higher_is_better else 'LIB'}" for g in gs}
    text = f"## {suite}\n" + md_table(["test case", *platforms], out)
    if path := paths_text(gs):
        text += f"\n\n{path}"
    text += "\n\n" + "; ".join(f"{t}: {u}" for t, u in unit.items())
    if ratios:
        text += (
            "\n(mean ± 95% CI half-width; ×ratio to the baseline, > 1 = better, and its verdict:"
            " same/faster/slower against the noise floor, undecided when the CI cannot tell)"
        )
    if paths:
        text += (
            "\n(no ratio: measured over another network path than the baseline, see net_path;"
            ' client_path = "bridge" puts every platform on one path)'
        )
    if more:
        text += "\n" + "; ".join(f"{t}: +{n} more rows in the HTML report" for t, n in more.items())
    return text


def paths_text(gs: list[Group]) -> str | None:
    """Which network path the load generators took (label net_path), per platform when they
    differ; None for results without one (suites with no client)."""
    by: dict[str, set[str]] = {}
    for g in gs:
        if (p := normalize.path_of(g)) is not None:
            by.setdefault(str(p), set()).add(g.key.platform)
    if not by:
        return None
    if len(by) == 1:
        return f"Client path: net_path={next(iter(by))} for every platform (docs/network.md)."
    parts = "; ".join(f"net_path={p}: {', '.join(sorted(ps))}" for p, ps in sorted(by.items()))
    return f"Client paths differ: {parts} (docs/network.md)."


def path_note(data: ReportData, gs: list[Group]) -> Raw:
    """The client's network path, and why rows have no ratio: their platform was measured
    over another path than the baseline (one line per platform and path)."""
    text = paths_text(gs)
    out = Raw(f'<p class="note">{h(text)}</p>') if text else Raw("")
    why = list(dict.fromkeys(data.incomparable[g.key] for g in gs if g.key in data.incomparable))
    if not why:
        return out
    items = "".join(f"<li>{h(w)}</li>" for w in why)
    return out + Raw(
        f'<div class="note"><p>No ratio to the baseline for:</p><ul>{items}</ul></div>'
    )


def beside_note(gs: list[Group]) -> Raw:
    """Why a neighbour's rows name a target size: a different:SIZE neighbour ran its size
    once beside each of the target's sizes, and those runs are not repetitions."""
    there = [g.key.dim(BESIDE_LABEL) for g in gs if g.key.dim(BESIDE_LABEL) is not None]
    if not there:
        return Raw("")
    text = (
        "A different:SIZE neighbour serves its one size once beside each of the target's "
        "sizes: its rows are split by the target size it ran beside, as the co-location "
        "section pairs them (a lockstep step's results by that step; a run's own figures, "
        "such as a sweep's peak, by order: its k-th run beside the target's k-th size; a "
        "cell whose target stopped after one size, its one run beside that size), never "
        "averaged across them."
    )
    if UNPAIRED in there:
        text += (
            " 'beside target: unknown' rows hold runs that could not be paired, and stay "
            "pooled: of cells whose neighbour and target ran different numbers of sizes (one "
            "stopped part-way), at a step the target recorded no headline at, or of a metric "
            "stored for some runs only (errors by class) with no lockstep step to place it."
        )
    return Raw(f'<p class="note">{h(text)}</p>')


# per-step measurements of a sweep (reply, connect and transfer times, errors, send rate...
# of every environment at every step) listed beyond this many rows in one suite are left to
# the export: a full colocation-web run has tens of thousands (docs/code-measurements.md); a
# plain web sweep lists
MAX_PER_STEP_ROWS = 2000


def _per_step(g: Group) -> bool:
    return any(k == "step" for k, _v in g.key.dims)


def _per_step_summary(g: Group) -> bool:
    """A mean of one sweep step's 1 s samples (scheduler, network... per environment)."""
    return labelkeys.STAT in g.labels and _per_step(g)


@register_section(30, "suites")
def suite_sections(data: ReportData) -> list[Section]:
    notes = data.description.suites
    out = []
    for suite in data.suites:
        primary = data.select(suite=suite, primary=True)
        # by key (one group per key): `g not in primary` compared every pair of groups field
        # by field, 80 million comparisons on a one-repetition colocation-web run
        chosen = {g.key for g in primary}
        others = [g for g in data.select(suite=suite, role=None) if g.key not in chosen]
        # a sweep's per-step 1 s summaries of every environment (thousands of rows in a
        # co-location run) are drawn per step in the co-location section; listed, they
        # buried the table (docs/code-measurements.md)
        per_step = [g for g in others if _per_step_summary(g)]
        others = [g for g in others if not _per_step_summary(g)]
        stepped = [g for g in others if _per_step(g)]
        if len(stepped) > MAX_PER_STEP_ROWS:
            others = [g for g in others if not _per_step(g)]
        else:
            stepped = []
        if not primary and not others and not stepped and not per_step:
            out.append(
                Section(
                    f"Suite: {suite}",
                    Raw('<p class="note">No samples.</p>'),
                    f"## {suite}\nno samples",
                )
            )
            continue
        body = Raw(f'<p class="note">{h(notes[suite])}</p>') if suite in notes else Raw("")
        d = digests_needed(primary)
        body += scroll(table(HEADERS, [group_row(data, g, d) for g in primary]))
        body += path_note(data, primary)
        charts = []
        for tc in dict.fromkeys(g.key.test_case for g in primary):
            svg = test_chart(data, [g for g in primary if g.key.test_case == tc])
            if svg:
                charts.append(svg)
        if charts:
            body += Raw('<div class="charts">' + "".join(charts) + "</div>")
        if others:
            d = digests_needed(others)
            body += details(
                f"Other metrics and roles ({len(others)} rows)",
                beside_note(others)
                + scroll(table(HEADERS, [group_row(data, g, d) for g in others])),
            )
        if stepped:
            body += Raw(
                f'<p class="note">{len(stepped)} rows of per-step measurements (one per sweep '
                "step, role and metric: reply, connect and transfer times, errors, send rate…) "
                f"are not listed, more than {MAX_PER_STEP_ROWS}: the throughput per step is "
                "drawn in the web serving and co-location sections, reply and transfer time "
                "against solo are its Table 3, and <code>virtbench results</code> exports every "
                "one.</p>"
            )
        if per_step:
            body += Raw(
                f'<p class="note">{len(per_step)} per-step summaries of each environment\'s 1 s '
                "samples are not listed: the co-location section draws them against the rate, "
                "and <code>virtbench results</code> exports them.</p>"
            )
        out.append(Section(f"Suite: {suite}", body, md_summary(data, suite, primary or others)))
    return out
