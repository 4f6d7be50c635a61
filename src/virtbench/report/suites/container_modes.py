"""Seed 004 Figs. 4-5: containers that differ only in their network mode (Fig. 4, port
forwarding "nat" vs direct host mapping "host") or only in their storage (Fig. 5, the
copy-on-write layer "overlay", the paper's AUFS, vs a mounted volume), per test case.

Found from the stored platform specs (host, options) and the run's platform facts (which
types have isolation modes: analysis/platform_facts.py), never from platform names:
container platforms whose options are equal but for the axis' own options form a set, and a
set with two or more modes measured in the axis' suites gets a figure. Docker, crun or any
other engine alike; a container in a VM only meets containers in the same VM (the paper's
metal and vm panels).

A bar is the mean of a test case's primary metric as a ratio to the run's baseline (native:
the metal.local column of the paper's Tables 5-6), > 1 = better, whiskers its 95% CI; a run
without a baseline for every test case divides by the set's reference mode instead (volume,
host). The table under each figure has the absolute means with their spread, the invalid
samples and each mode's ratio to the reference mode with the CI and what it decides.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ... import labelkeys
from ...analysis import platform_facts
from ...analysis.groups import Group
from ...analysis.normalize import Comparison, compare
from ...analysis.ratios import FASTER, SAME, SLOWER, UNDECIDED
from .. import fmt
from ..core.results import VERDICT_CLASS, decision_badge
from ..data import ReportData
from ..html import Raw, Td, badge, h, scroll, table
from ..sections import Section, register_section
from ..svg import Bar, bar_chart

MAX_X = 8  # x groups per chart before it is split per test case, then per dimension


@dataclass(frozen=True)
class Axis:
    name: str
    fig: str
    title: str
    options: tuple[str, ...]  # what makes the mode; every other option must be equal
    reference: str  # the mode the others are divided by in the table
    suites: tuple[str, ...]  # where the mode matters


NETWORK = Axis(
    "network",
    "Fig. 4",
    "port forwarding (nat) vs direct host mapping (host)",
    # a published port's offset and Docker's proxy/DNAT choice exist only with nat
    ("network", "docker_nat", "publish_port_offset"),
    "host",
    ("network", "web", "application"),
)
STORAGE = Axis(
    "storage",
    "Fig. 5",
    "copy-on-write overlay (the paper's AUFS) vs volume",
    ("storage",),
    "volume",
    ("disk", "application"),
)
AXES = (NETWORK, STORAGE)


@dataclass(frozen=True)
class Member:
    platform: str
    mode: str


@dataclass
class ModeSet:
    axis: Axis
    shared: str  # what the members have in common, e.g. "docker, network host"
    members: list[Member]

    @property
    def reference(self) -> Member:
        return next((m for m in self.members if m.mode == self.axis.reference), self.members[0])


def mode_of(axis: Axis, options: dict[str, Any], labels: dict[str, Any]) -> str:
    """The platform's mode on `axis`; Docker's nat names how `-p` was served, as recorded."""
    if axis is STORAGE:
        return str(options["storage"])
    net = str(options["network"])
    nat = labels.get(labelkeys.DOCKER_NAT) or options.get("docker_nat")
    return f"{net} ({nat})" if net == "nat" and nat else net


def _shared(axis: Axis, spec: dict[str, Any], options: dict[str, Any]) -> str:
    other = "storage" if axis is NETWORK else "network"
    parts = [str(options["runtime"]), f"{other} {options[other]}"]
    parts += [
        f"{k}={v}"
        for k, v in sorted(options.items())
        if k not in axis.options and k not in ("runtime", other)
    ]
    if spec.get("host"):
        parts.append(f"in {spec['host']}")
    return ", ".join(parts)


def mode_sets(data: ReportData, axis: Axis) -> list[ModeSet]:
    """Sets of container platforms equal but for `axis`, with 2+ modes measured in its suites."""
    specs: dict[str, dict[str, Any]] = {}
    for c in data.cells:
        specs.setdefault(c.platform, json.loads(c.platform_json or "{}"))
    labels = data.platform_labels()
    measured = {g.key.platform for s in axis.suites for g in data.select(suite=s, primary=True)}
    sets: dict[tuple[Any, str], ModeSet] = {}
    for p in data.platforms:
        spec = specs.get(p) or {}
        # a type with isolation modes (its run's host facts say; the report imports no platform)
        defaults = platform_facts.mode_defaults(data.host, spec)
        if defaults is None or p not in measured:
            continue
        options = {**defaults, **(spec.get("options") or {})}
        rest = {k: v for k, v in options.items() if k not in axis.options}
        key = (spec.get("host"), json.dumps(rest, sort_keys=True, default=str))
        if key not in sets:
            sets[key] = ModeSet(axis, _shared(axis, spec, options), [])
        sets[key].members.append(Member(p, mode_of(axis, options, labels.get(p, {}))))
    return [s for s in sets.values() if len({m.mode for m in s.members}) > 1]


XKey = tuple[str, str, tuple[tuple[str, Any], ...]]  # scenario, test case, dims


@dataclass
class Part:
    """One chart: its x groups and their labels."""

    suffix: str
    xs: list[XKey]
    labels: dict[XKey, str]


def _full_label(x: XKey, scenarios: int) -> str:
    sc, tc, dims = x
    text = fmt.test(tc, dims)
    return text + (f" · {sc}" if scenarios > 1 else "")


def _rest_label(dims: tuple[tuple[str, Any], ...]) -> str:
    """Dimension labels of one chart's x group; the values alone when one key is left."""
    if len(dims) == 1:
        return fmt.dims(dims).split("=", 1)[1]
    return fmt.dims(dims)


def _determined(xs: list[XKey]) -> set[str]:
    """Dimension keys whose value follows from another key's (fio-iozone's bs from its
    phase): they say nothing on an axis label."""
    keys = list(dict.fromkeys(k for x in xs for k, _v in x[2]))
    out = set()
    for k in keys:
        for j in keys:
            if j == k or j in out:
                continue
            seen: dict[Any, Any] = {}
            if all(seen.setdefault(d.get(j), d.get(k)) == d.get(k) for d in map(_dd, xs)):
                out.add(k)
                break
    return out


def _dd(x: XKey) -> dict[str, Any]:
    return dict(x[2])


def parts(xs: list[XKey]) -> list[Part]:
    """One chart of test cases when they fit and have no dimensions, else one per test case
    (its name in the title, its dimensions on the axis: "fio-iozone [bs=1M, phase=read]"
    clipped to "fio-iozone [bs=…" said nothing); a test case that still does not fit keeps
    its dimension with the most values on the x axis and gets a chart per value of the
    others (fio-iozone: its phases, one chart for direct=0 and one for 1)."""
    scenarios = len({x[0] for x in xs})
    if len(xs) <= MAX_X and not any(x[2] for x in xs):
        return [Part("", xs, {x: _full_label(x, scenarios) for x in xs})]
    out: list[Part] = []
    by_test: dict[tuple[str, str], list[XKey]] = defaultdict(list)
    for x in xs:
        by_test[(x[0], x[1])].append(x)
    for (sc, tc), txs in by_test.items():
        name = tc + (f" · {sc}" if scenarios > 1 else "")
        hidden = _determined(txs)
        values: dict[str, list[Any]] = defaultdict(list)
        for x in txs:
            for k, v in x[2]:
                if k not in hidden and v not in values[k]:
                    values[k].append(v)
        varying = [k for k, vs in values.items() if len(vs) > 1]
        if len(txs) <= MAX_X or len(varying) < 2:
            labels = {
                x: _rest_label(tuple(kv for kv in x[2] if kv[0] in varying)) or tc for x in txs
            }
            out.append(Part(name, txs, labels))
            continue
        keep = max(varying, key=lambda k: len(values[k]))
        split = [k for k in varying if k != keep]
        charts: dict[tuple[tuple[str, Any], ...], list[XKey]] = defaultdict(list)
        for x in txs:
            charts[tuple((k, _dd(x)[k]) for k in split)].append(x)
        for fixed, sub in charts.items():
            labels = {x: _rest_label(((keep, _dd(x)[keep]),)) for x in sub}
            out.append(Part(f"{name} · {fmt.dims(fixed)}", sub, labels))
    return out


def _groups(data: ReportData, ms: ModeSet) -> dict[tuple[XKey, str], Group]:
    members = {m.platform for m in ms.members}
    return {
        ((g.key.scenario, g.key.test_case, g.key.dims), g.key.platform): g
        for s in ms.axis.suites
        for g in data.select(suite=s, primary=True)
        if g.key.platform in members
    }


def measured_order(data: ReportData, groups: dict[tuple[XKey, str], Group]) -> list[XKey]:
    """The x groups in the order the workload measured them (IOzone: write, rewrite, read,
    reread, random read, random write), not alphabetical: by each one's first sample."""
    xs = list(dict.fromkeys(x for x, _p in groups))
    by_test: dict[tuple[str, str], list[XKey]] = defaultdict(list)
    for x in xs:
        by_test[(x[0], x[1])].append(x)
    first: dict[XKey, int] = {}
    for i, row in enumerate(data.samples):
        for x in by_test.get((row["scenario"], row["test_case"]), ()):
            if x not in first and all(row["labels"].get(k) == v for k, v in x[2]):
                first[x] = i
    return sorted(xs, key=lambda x: first.get(x, len(data.samples)))


def _note(g: Group) -> str:
    s = g.summary
    text = f"{fmt.mean_ci(s.mean, s.ci_half, g.unit)}, n={s.n}"
    text += f", CV {fmt.pct(s.cv)}" if s.cv is not None else ""
    return text + (f", {g.n_invalid} invalid" if g.n_invalid else "")


def _ratio_bar(c: Comparison | None, g: Group) -> Bar:
    if c is None:
        return Bar(None)
    ci = f" [{fmt.ratio(c.ratio_low)} – {fmt.ratio(c.ratio_high)}]" if c.ratio_low else ""
    return Bar(
        c.ratio,
        c.ratio_low,
        c.ratio_high,
        f"ratio{ci}; {_note(g)}",
        warn=g.summary.noisy or bool(g.n_invalid),
    )


def _to_baseline(data: ReportData, groups: dict[tuple[XKey, str], Group]) -> bool:
    """Ratios to the run's baseline when it measured every test; else to the reference mode."""
    return bool(data.baseline) and all(
        g.key in data.comparisons or g.summary.mean is None for g in groups.values()
    )


def _what(data: ReportData, ms: ModeSet, groups: dict[tuple[XKey, str], Group]) -> str:
    if _to_baseline(data, groups):
        return f"ratio to {data.baseline}"
    return f"ratio to {ms.reference.mode} ({ms.reference.platform})"


def _legend_name(m: Member) -> str:
    return f"{m.mode}: {m.platform}"


def _charts(data: ReportData, ms: ModeSet, groups: dict[tuple[XKey, str], Group]) -> str:
    xs = measured_order(data, groups)
    to_base = _to_baseline(data, groups)
    what = _what(data, ms, groups)
    ref = ms.reference
    out = []
    for part in parts(xs):
        bars: dict[tuple[str, str], Bar] = {}
        series = []
        for m in ms.members:
            drawn = False
            for x in part.xs:
                g = groups.get((x, m.platform))
                if g is None:
                    continue
                if to_base:
                    c = data.comparisons.get(g.key)
                else:
                    rg = groups.get((x, ref.platform))
                    c = compare(g, rg) if rg is not None else None
                bars[(part.labels[x], _legend_name(m))] = _ratio_bar(c, g)
                drawn = True
            if drawn:
                series.append((_legend_name(m), data.colour(m.platform)))
        # the axis follows the bars, not an n=3 interval reaching 10x (cut, drawn open-ended)
        top = max((b.value for b in bars.values() if b.value is not None), default=1.0)
        title = f"{ms.axis.fig} {ms.axis.name} · {ms.shared}" + (
            f" · {part.suffix}" if part.suffix else ""
        )
        out.append(
            bar_chart(
                f"{title}: {what} (> 1 = better), 95% CI",
                [part.labels[x] for x in part.xs],
                series,
                bars,
                what,
                ref=1.0,
                cap=max(2.0, 1.2 * top),
            )
        )
    return '<div class="charts">' + "".join(out) + "</div>"


def _mean_cell(g: Group | None) -> Td | str:
    if g is None:
        return "–"
    s = g.summary
    text = h(fmt.mean_ci(s.mean, s.ci_half, g.unit) if s.mean is not None else "no valid sample")
    text += f"<br><small>n={s.n}" + (f", CV {fmt.pct(s.cv)}" if s.cv is not None else "")
    text += f", {fmt.num(s.minimum)} – {fmt.num(s.maximum)}</small>" if s.n else "</small>"
    if s.noisy:
        text += badge("high CV", "warn")
    if g.n_invalid:
        reasons = "; ".join(sorted({i.reason for i in g.invalid}))
        text += badge(f"+{g.n_invalid} invalid", "bad", reasons)
    return Td(Raw(text), "num bad" if g.n_invalid else "num noisy" if s.noisy else "num")


def mode_ratios(
    ms: ModeSet, groups: dict[tuple[XKey, str], Group]
) -> dict[tuple[XKey, str], Comparison]:
    """Each non-reference member against the reference member, per x group."""
    ref = ms.reference
    out = {}
    for (x, p), g in groups.items():
        rg = groups.get((x, ref.platform))
        if p != ref.platform and rg is not None:
            c = compare(g, rg)
            if c is not None:
                out[(x, p)] = c
    return out


def _ratio_cell(c: Comparison | None) -> Td | str:
    if c is None:
        return "–"
    cls = VERDICT_CLASS.get(c.decision, "")
    text = h(f"×{fmt.ratio(c.ratio)}") + decision_badge(c)
    if c.ratio_low is not None:
        text += f"<br><small>[{fmt.ratio(c.ratio_low)} – {fmt.ratio(c.ratio_high)}]</small>"
    return Td(Raw(text), f"num {cls}")


def _table(data: ReportData, ms: ModeSet, groups: dict[tuple[XKey, str], Group]) -> str:
    xs = measured_order(data, groups)
    scenarios = len({x[0] for x in xs})
    ref = ms.reference
    others = [m for m in ms.members if m is not ref]
    ratios = mode_ratios(ms, groups)
    head = [
        "test case",
        "metric",
        *[f"{m.mode}: {m.platform}" for m in ms.members],
        *[f"{m.mode} vs {ref.mode} (> 1 = better)" for m in others],
    ]
    rows = []
    for x in xs:
        g0 = next(groups[(x, m.platform)] for m in ms.members if (x, m.platform) in groups)
        arrow = "↑" if g0.higher_is_better else "↓"
        rows.append(
            [
                Td(_full_label(x, scenarios), "name"),
                Td(f"{g0.key.metric} {arrow}", "name", g0.unit),
                *[_mean_cell(groups.get((x, m.platform))) for m in ms.members],
                *[_ratio_cell(ratios.get((x, m.platform))) for m in others],
            ]
        )
    return scroll(table(head, rows))


def _md_line(ms: ModeSet, groups: dict[tuple[XKey, str], Group]) -> list[str]:
    ratios = mode_ratios(ms, groups)
    ref = ms.reference
    out = []
    for m in ms.members:
        if m is ref:
            continue
        cs = [c for (_x, p), c in ratios.items() if p == m.platform]
        if not cs:
            continue
        gm = math.exp(sum(math.log(c.ratio) for c in cs) / len(cs))
        tally = {d: sum(c.decision == d for c in cs) for d in (SLOWER, FASTER, SAME, UNDECIDED)}
        bad = sum(g.n_invalid for (_x, p), g in groups.items() if p == m.platform)
        out.append(
            f"- {ms.axis.fig} {ms.axis.name}, {ms.shared}: {m.platform} [{m.mode}] ÷ "
            f"{ref.platform} [{ref.mode}]: geomean ×{gm:.3f} over {len(cs)} tests: "
            f"{tally[SLOWER]} slower, {tally[FASTER]} faster, {tally[SAME]} same, "
            f"{tally[UNDECIDED]} undecided" + (f"; {bad} invalid samples" if bad else "")
        )
    return out


NOTE = (
    "Seed 004 compares Docker's port forwarding with direct host mapping (Fig. 4) and AUFS "
    "with mounted volumes (Fig. 5) on its application stack. Here: container platforms whose "
    "stored options differ only in the network mode, or only in the storage, side by side on "
    "every test case of the suites where that mode matters ({suites}). Bars: a test case's "
    "primary metric as a ratio, &gt; 1 = better (to the run's baseline when it measured every "
    "test case, else to the reference mode), whiskers its 95% CI, cut open-ended where the "
    "axis ends; a red dashed outline marks a noisy result (CV &gt; 10%) or one with invalid "
    "samples, a – no valid result. Tables: absolute mean ± 95% CI, n, CV and range of the "
    "valid samples; invalid samples are counted with their reason, never in a mean; the last "
    "columns divide each mode by the reference mode (CI paired over the run's rounds; "
    "faster/slower/same/undecided as everywhere, docs/verdicts.md)."
)
SUITES = "network: " + ", ".join(NETWORK.suites) + "; storage: " + ", ".join(STORAGE.suites)


@register_section(65, "container-modes")
def container_modes(data: ReportData) -> Section | None:
    body, md = "", []
    for axis in AXES:
        for ms in mode_sets(data, axis):
            groups = _groups(data, ms)
            if not groups:
                continue
            ref = ms.reference
            body += (
                f"<h3>{h(axis.fig)} {h(axis.name)}: {h(axis.title)} — {h(ms.shared)}</h3>"
                f'<p class="note">Bars: {h(_what(data, ms, groups))}. Last columns: each mode '
                f"÷ {h(ref.mode)} ({h(ref.platform)}).</p>"
                + _charts(data, ms, groups)
                + _table(data, ms, groups)
            )
            md += _md_line(ms, groups)
    if not body:
        return None
    note = f'<p class="note">{NOTE.format(suites=h(SUITES))}</p>'
    return Section(
        "Container network and storage modes (seed 004 Figs. 4-5)",
        Raw(note + body),
        "## container modes (seed 004 Figs. 4-5)\n" + "\n".join(md) if md else "",
    )
