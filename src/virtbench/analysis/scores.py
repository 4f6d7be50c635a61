"""Two summary scores per suite: seed 004's normalized score and a geometric mean of ratios.

Seed 004 (§3.6): each test case's average result t is divided by the largest average of
that test case over all configurations (test_score = t / max t), and a suite's total score
is Σ sgn · test_score with sgn = -1 for lower-is-better tests. Faithful to the paper, the
max is taken for LIB tests too (so a LIB test subtracts most from the *worst*
configuration). Here a configuration is a (platform, scenario) pair and a test is one
(test case, primary metric, dimension labels) of the target role, so a fio test with
buffered and O_DIRECT results counts as two tests (as PTS's "Dbench1..4" do in the paper).
Its ± is an approximation: each test's CI half width divided by the same max, summed in
quadrature (the max is treated as a constant).

Only suites seed 004 scores get a total (the run's description says which: run_suites.seed004);
invalid samples never enter a mean, so never a maximum, and each suite lists what it left out.

Geometric mean: for each non-baseline platform and scenario, the geometric mean of the
oriented ratios to the baseline (> 1 = better), weighted so that every test case counts
once in its suite (a 20-point block-size sweep does not outweigh one single-number test)
and every workload suite once in "all". A suite that measures a cost of creating the
isolation (start-up: run_suites.workload = 0) gets its own row beside "all", never in it.
Its 95% CI is taken over the run's rounds (`ratios.weighted`): per round, the weighted
mean of the test cases' log ratios, then Student's t over the rounds, so noise that hits
every test case of a round together widens it; it reflects measurement noise, not the
spread between test cases, which is shown as the min..max of the ratios.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace

from ..results import SOLO_PEAK_SCENARIO
from ..store.description import SuiteScoring
from . import ratios
from .groups import Group, GroupKey
from .normalize import Comparison
from .ratios import Verdict

Config = tuple[str, str]  # (platform, scenario)
Scoring = Callable[[str], SuiteScoring]  # suite -> its flags (RunDescription.scoring_of)


def _v1_scoring(_suite: str) -> SuiteScoring:
    return SuiteScoring()


def _scored(groups: list[Group], scoring: Scoring) -> list[Group]:
    return [
        g
        for g in groups
        if g.primary
        and g.key.role == "target"
        and g.summary.mean is not None
        and g.key.scenario != SOLO_PEAK_SCENARIO
        and scoring(g.key.suite).scored
    ]


# --- seed 004 --------------------------------------------------------------------------


@dataclass
class Seed004Total:
    total: float
    ci_half: float | None
    n_tests: int
    missing: list[str] = field(default_factory=list)  # tests other configurations have


@dataclass
class Seed004Suite:
    suite: str
    tests: list[Hashable]
    labels: dict[Hashable, str]  # test -> display name
    hib: dict[Hashable, bool]
    configs: list[Config]
    test_scores: dict[tuple[Hashable, Config], float]
    totals: dict[Config, Seed004Total]
    means: dict[tuple[Hashable, Config], float] = field(default_factory=dict)  # raw t
    maxima: dict[Hashable, tuple[float, Config]] = field(default_factory=dict)  # max t, where
    # (test, config) -> reasons of the invalid samples left out of its mean
    excluded: dict[tuple[Hashable, Config], list[str]] = field(default_factory=dict)


def seed004_scores(
    means: dict[Hashable, dict[Hashable, float]],
    hib: dict[Hashable, bool],
    ci_halves: dict[Hashable, dict[Hashable, float | None]] | None = None,
) -> tuple[dict[tuple[Hashable, Hashable], float], dict[Hashable, Seed004Total]]:
    """Seed 004 formulas (1) and (2) on means[test][config] -> (test_scores, totals)."""
    scores: dict[tuple[Hashable, Hashable], float] = {}
    configs: list[Hashable] = []
    for per_config in means.values():
        for c in per_config:
            if c not in configs:
                configs.append(c)
    sq: dict[Hashable, float | None] = {c: 0.0 for c in configs}
    totals: dict[Hashable, float] = {c: 0.0 for c in configs}
    count: dict[Hashable, int] = {c: 0 for c in configs}
    for test, per_config in means.items():
        top = max(per_config.values())
        if top <= 0:
            continue  # a normalized score needs a positive maximum
        sgn = 1.0 if hib[test] else -1.0
        for c, t in per_config.items():
            s = t / top
            scores[(test, c)] = s
            totals[c] += sgn * s
            count[c] += 1
            half = (ci_halves or {}).get(test, {}).get(c)
            if half is None or sq[c] is None:
                sq[c] = None
            else:
                sq[c] += (half / top) ** 2
    out = {}
    for c in configs:
        missing = [str(t) for t, pc in means.items() if c not in pc]
        ci = math.sqrt(sq[c]) if sq[c] is not None and ci_halves is not None else None
        out[c] = Seed004Total(totals[c], ci, count[c], missing)
    return scores, out


def test_label(key: GroupKey) -> str:
    return key.test_case + (f" [{key.dims_text}]" if key.dims else "")


def _excluded(groups: list[Group], suite: str) -> dict[tuple[Hashable, Config], list[str]]:
    return {
        (g.key.test, (g.key.platform, g.key.scenario)): [i.reason for i in g.invalid]
        for g in groups
        if g.key.suite == suite
        and g.primary
        and g.key.role == "target"
        and g.invalid
        and g.key.scenario != SOLO_PEAK_SCENARIO
    }


def seed004(groups: list[Group], scoring: Scoring = _v1_scoring) -> list[Seed004Suite]:
    """Seed 004 scores for every scored suite of a run that seed 004 scores."""
    suites: dict[str, list[Group]] = {}
    for g in _scored(groups, scoring):
        if scoring(g.key.suite).seed004:
            suites.setdefault(g.key.suite, []).append(g)
    result = []
    for suite, gs in suites.items():
        means: dict[Hashable, dict[Hashable, float]] = {}
        halves: dict[Hashable, dict[Hashable, float | None]] = {}
        hib: dict[Hashable, bool] = {}
        labels: dict[Hashable, str] = {}
        configs: list[Config] = []
        for g in gs:
            test, cfg = g.key.test, (g.key.platform, g.key.scenario)
            means.setdefault(test, {})[cfg] = g.summary.mean
            halves.setdefault(test, {})[cfg] = g.summary.ci_half
            hib[test], labels[test] = g.higher_is_better, test_label(g.key)
            if cfg not in configs:
                configs.append(cfg)
        scores, totals = seed004_scores(means, hib, halves)
        for cfg, t in totals.items():  # name missing tests readably
            t.missing = [labels[test] for test in means if cfg not in means[test]]
        excluded = _excluded(groups, suite)
        for _t, cfg in excluded:  # all its samples invalid: shown, with nothing to sum
            if cfg not in configs:
                configs.append(cfg)
                totals[cfg] = Seed004Total(0.0, None, 0, [labels[t] for t in means])
        raw = {(t, c): v for t, pc in means.items() for c, v in pc.items()}
        top = {t: max((v, c) for c, v in pc.items()) for t, pc in means.items()}
        result.append(
            Seed004Suite(
                suite,
                list(means),
                labels,
                hib,
                configs,
                scores,
                totals,
                raw,
                {t: (v, c) for t, (v, c) in top.items() if v > 0},
                excluded,
            )
        )
    return result


# --- geometric mean of ratios ----------------------------------------------------------


@dataclass
class GeoMean:
    suite: str  # a suite name, or "all"
    platform: str
    scenario: str
    value: float | None  # None: no test case of the suite has a valid ratio
    low: float | None
    high: float | None
    n_tests: int  # test cases that contributed
    ratio_min: float | None
    ratio_max: float | None
    note: str = ""  # why there is no CI, if there is none
    missing: list[str] = field(default_factory=list)  # baseline test cases without a ratio
    contains: list[str] = field(default_factory=list)  # "all": the suites it is over
    beside: bool = False  # a cost suite (start-up): shown beside "all", not inside it
    verdict: Verdict | None = None  # faster / slower / same / undecided, as a test case's

    @property
    def overhead_pct(self) -> float | None:
        return None if self.value is None else (1.0 - self.value) * 100.0

    @property
    def decision(self) -> str:
        return ratios.UNDECIDED if self.verdict is None else self.verdict.outcome


def _weights(comps: list[Comparison]) -> list[tuple[float, Comparison]]:
    """Every test case weighs 1, shared equally among its dimension points."""
    per_tc: dict[str, list[Comparison]] = {}
    for c in comps:
        per_tc.setdefault(c.key.test_case, []).append(c)
    return [(1.0 / (len(per_tc) * len(cs)), c) for cs in per_tc.values() for c in cs]


def geomeans(
    groups: list[Group],
    comparisons: Mapping[GroupKey, Comparison],
    baseline: str | None,
    scoring: Scoring = _v1_scoring,
) -> list[GeoMean]:
    """Per suite and over the workload suites ("all"), for every non-baseline (platform,
    scenario); cost suites are marked `beside`.

    Test cases the baseline measured but this platform has no valid ratio for (failed cells,
    all samples invalid) are listed in `missing`: the mean is over the others only."""
    if not baseline:
        return []
    expected: dict[tuple[str, str], set[str]] = {}  # (suite, scenario) -> baseline tests
    by_cfg: dict[Config, dict[str, list[Comparison]]] = {}
    for g in groups:
        if not (g.primary and g.key.role == "target") or g.key.scenario == SOLO_PEAK_SCENARIO:
            continue
        if not scoring(g.key.suite).scored:
            continue
        if g.key.platform == baseline:
            if g.summary.mean is not None:
                expected.setdefault((g.key.suite, g.key.scenario), set()).add(g.key.test_case)
            continue
        suites = by_cfg.setdefault((g.key.platform, g.key.scenario), {})
        comps = suites.setdefault(g.key.suite, [])
        c = comparisons.get(g.key)
        if c is not None:
            comps.append(c)
    out: list[GeoMean] = []
    for (platform, scenario), suites in by_cfg.items():
        overall: list[tuple[float, Comparison]] = []
        all_missing: list[str] = []
        workload = [s for s in suites if scoring(s).workload]
        usable = [s for s in workload if suites[s]]
        for suite, comps in suites.items():
            have = {c.key.test_case for c in comps}
            missing = sorted(expected.get((suite, scenario), set()) - have)
            weighted = _weights(comps)
            geo = _geo(suite, platform, scenario, weighted, missing)
            geo.beside = suite not in workload
            out.append(geo)
            if suite in workload:
                all_missing += missing
                overall += [(w / len(usable), c) for w, c in weighted]
        if len(workload) > 1:
            geo = _geo("all", platform, scenario, overall, all_missing)
            geo.contains = workload
            out.append(geo)
    return out


def supported(verdict: Verdict, members: list[str]) -> Verdict:
    """A score's faster/slower stands only where one of its test cases says the same on its
    own: a consistent few-percent shift over every round of a busy host's run is what a
    burst pattern looks like too, and a cost no single test shows is not one to report."""
    if verdict.outcome not in (ratios.FASTER, ratios.SLOWER) or verdict.outcome in members:
        return verdict
    return replace(
        verdict,
        outcome=ratios.UNDECIDED,
        reason=f"{verdict.reason}; but no test case of it is {verdict.outcome} on its own",
    )


def _geo(suite: str, platform: str, scenario: str, weighted, missing: list[str]) -> GeoMean:
    if not weighted:
        return GeoMean(
            suite, platform, scenario, None, None, None, 0, None, None, "no valid ratio", missing
        )
    est, note = ratios.weighted([(w, c.estimate) for w, c in weighted])
    assert est is not None
    # the floor of a score: its test cases' floors, weighted as they are
    floor = sum(w * c.verdict.floor for w, c in weighted) / sum(w for w, _ in weighted)
    measured = any(c.verdict.floor_source for _, c in weighted)
    verdict = supported(
        ratios.judge(est, floor, "its test cases' A/A floors" if measured else ""),
        [c.verdict.outcome for _, c in weighted],
    )
    ratio_values = [c.ratio for _, c in weighted]
    n_tc = len({c.key.test_case for _, c in weighted})
    return GeoMean(
        suite,
        platform,
        scenario,
        est.value,
        est.low,
        est.high,
        n_tc,
        min(ratio_values),
        max(ratio_values),
        note,
        missing,
        verdict=verdict,
    )
