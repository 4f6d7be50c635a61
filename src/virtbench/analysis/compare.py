"""A against B, per test case: the ratio of means with its interval, two significance tests,
and a verdict a CI job can act on.

ratio       mean(B) / mean(A), raw (not oriented); its 95% CI by Fieller's theorem (the exact
            interval of a ratio of two normal means, Welch-Satterthwaite df), unbounded (None)
            when A's mean cannot be told from zero.
p           two-sided permutation test on the difference of means (as Firecracker's A/B
            harness): exact over every split of the pooled samples when there are at most
            `rounds` splits, else `rounds` seeded Monte Carlo splits, p = (hits + 1) / (rounds + 1).
Mann-Whitney the same permutation test on mid-ranks (the exact U test, ties included): the
            second opinion for latency distributions, where one outlier can carry a mean.
floor       max(threshold, pooled CV): a change smaller than the runs' own noise is not called.

Verdict (B relative to A, in the metric's own direction: faster = better):
  ambiguous  fewer than MIN_SAMPLES valid samples on a side, or no ratio
  same       every value equal, or the whole CI within ±floor (a difference, if any, too small
             to matter, significant or not)
  faster /   p < alpha and the whole CI beyond the floor on one side (for latency metrics
  slower     Mann-Whitney must agree)
  ambiguous  otherwise, with the reason (not significant with a wide CI, CI straddling the floor,
             the tests disagree, too few samples for a permutation test to reach alpha)
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..results import SOLO_PEAK_SCENARIO
from .groups import Group
from .normalize import path_mismatch, path_of, without_paths
from .stats import CONFIDENCE, Summary, summarize, t_critical, welch_df

FASTER, SLOWER, SAME, AMBIGUOUS = "faster", "slower", "same", "ambiguous"
VERDICTS = (FASTER, SLOWER, SAME, AMBIGUOUS)
MIN_SAMPLES = 3
DEFAULT_THRESHOLD = 0.02
DEFAULT_ALPHA = 0.05
ROUNDS = 10_000
SEED = 0  # Monte Carlo p-values are reproducible: the same runs give the same verdicts
TIME_UNITS = frozenset({"ns", "us", "µs", "ms", "s"})
_REL_TOL = 1e-9  # splits as extreme as the observed one, up to rounding of float sums


@dataclass(frozen=True)
class Settings:
    threshold: float = DEFAULT_THRESHOLD  # effect-size floor, a fraction (0.02 = 2%)
    alpha: float = DEFAULT_ALPHA
    rounds: int = ROUNDS
    seed: int = SEED

    @property
    def confidence(self) -> float:
        """The CI's level matches the test's: 95% for alpha = 0.05."""
        return 1.0 - self.alpha


@dataclass(frozen=True)
class PermutationResult:
    p: float
    exact: bool
    min_p: float  # the smallest p this test can give at these sample sizes


def permutation_test(
    a: Sequence[float], b: Sequence[float], rounds: int = ROUNDS, seed: int = SEED
) -> PermutationResult:
    """Two-sided permutation test of |mean(b) - mean(a)|."""
    pooled = [float(x) for x in (*a, *b)]
    n, k = len(pooled), len(a)
    if k == 0 or k == n:
        return PermutationResult(1.0, True, 1.0)
    total = math.fsum(pooled)

    def diff(sum_a: float) -> float:
        # the difference of means follows from the sum of the values put in A
        return abs((total - sum_a) / (n - k) - sum_a / k)

    observed = diff(math.fsum(a))
    tol = _REL_TOL * max(1.0, max(abs(x) for x in pooled))
    splits = math.comb(n, k)
    if splits <= rounds:
        hits = sum(
            diff(math.fsum(pooled[i] for i in idx)) >= observed - tol
            for idx in itertools.combinations(range(n), k)
        )
        # a split and its mirror are equally extreme when k == n - k: the observed pair at least
        return PermutationResult(hits / splits, True, (2 if 2 * k == n else 1) / splits)
    rng = random.Random(seed)
    hits = sum(diff(math.fsum(rng.sample(pooled, k))) >= observed - tol for _ in range(rounds))
    return PermutationResult((hits + 1) / (rounds + 1), False, 1.0 / (rounds + 1))


def midranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def mann_whitney(
    a: Sequence[float], b: Sequence[float], rounds: int = ROUNDS, seed: int = SEED
) -> tuple[float, PermutationResult]:
    """(U of A, two-sided p): U counts the pairs where A's value exceeds B's (ties count 1/2);
    p is the permutation test on mid-ranks, which is the exact U test."""
    ranks = midranks([*a, *b])
    k = len(a)
    u = sum(ranks[:k]) - k * (k + 1) / 2.0
    return u, permutation_test(ranks[:k], ranks[k:], rounds, seed)


def fieller(a: Summary, b: Summary, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """CI of mean(B) / mean(A) by Fieller's theorem; None when undefined or unbounded."""
    if a.n < 2 or b.n < 2 or a.stdev is None or b.stdev is None or not a.mean or b.mean is None:
        return None
    va, vb = a.stdev**2 / a.n, b.stdev**2 / b.n
    ratio = b.mean / a.mean
    # the variance of mean(B) - ratio * mean(A), split by sample, gives the Welch df
    df = welch_df([vb, ratio * ratio * va], [b.n - 1, a.n - 1])
    if df is None:
        return None
    t2 = t_critical(df, confidence) ** 2
    quad = a.mean**2 - t2 * va
    if quad <= 0:
        return None  # A's mean is not significantly non-zero: the interval has no bounds
    disc = (a.mean * b.mean) ** 2 - quad * (b.mean**2 - t2 * vb)
    root = math.sqrt(max(disc, 0.0))
    return ((a.mean * b.mean - root) / quad, (a.mean * b.mean + root) / quad)


def pooled_cv(a: Summary, b: Summary) -> float | None:
    """The two samples' CV pooled by degrees of freedom: the runs' own noise."""
    ca, cb = a.cv, b.cv
    if ca is None or cb is None:
        return None
    return math.sqrt(((a.n - 1) * ca * ca + (b.n - 1) * cb * cb) / (a.n + b.n - 2))


def is_latency(unit: str, higher_is_better: bool) -> bool:
    return not higher_is_better and unit in TIME_UNITS


@dataclass(frozen=True)
class Outcome:
    """One test case, B against A."""

    suite: str
    test_case: str
    metric: str
    dims: tuple[tuple[str, Any], ...]
    scenario: str
    platform_a: str
    platform_b: str
    unit: str
    higher_is_better: bool
    a: Summary
    b: Summary
    ratio: float | None  # mean(B) / mean(A)
    ratio_ci: tuple[float, float] | None
    permutation: PermutationResult | None
    mann_whitney_p: float | None
    floor: float  # the effect-size floor applied, a fraction
    verdict: str
    reason: str

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0


def _pct(x: float) -> str:
    return f"{(x - 1.0) * 100.0:+.1f}%"


def judge(a: Group, b: Group, settings: Settings = Settings()) -> Outcome:
    """The verdict for B against A (see the module docstring)."""
    sa, sb = summarize(a.values), summarize(b.values)
    hib = a.higher_is_better
    positive = sa.mean is not None and sb.mean is not None and sa.mean > 0 and sb.mean > 0
    ratio = sb.mean / sa.mean if positive else None
    ci = fieller(sa, sb, settings.confidence) if ratio is not None else None
    noise = pooled_cv(sa, sb)
    floor = max(settings.threshold, noise or 0.0)
    perm = mw = None
    if sa.n and sb.n:
        perm = permutation_test(a.values, b.values, settings.rounds, settings.seed)
        if is_latency(a.unit, hib):
            mw = mann_whitney(a.values, b.values, settings.rounds, settings.seed)[1]

    def out(verdict: str, reason: str) -> Outcome:
        return Outcome(
            a.key.suite,
            a.key.test_case,
            a.key.metric,
            a.key.dims,
            a.key.scenario,
            a.key.platform,
            b.key.platform,
            a.unit,
            hib,
            sa,
            sb,
            ratio,
            ci,
            perm,
            None if mw is None else mw.p,
            floor,
            verdict,
            reason,
        )

    pa, pb = path_of(a), path_of(b)
    if pa is not None and pb is not None and pa != pb:
        return out(
            AMBIGUOUS, path_mismatch(f"B ({b.key.platform})", pb, f"A ({a.key.platform})", [pa])
        )
    if sa.n < MIN_SAMPLES or sb.n < MIN_SAMPLES:
        invalid = a.n_invalid + b.n_invalid
        extra = f", {invalid} invalid left out" if invalid else ""
        return out(
            AMBIGUOUS, f"too few valid samples ({sa.n} vs {sb.n}; need {MIN_SAMPLES}{extra})"
        )
    if len(set(a.values) | set(b.values)) == 1:
        return out(SAME, "every value equal")
    if ratio is None:
        return out(AMBIGUOUS, "no ratio: a mean is zero or negative")
    assert perm is not None
    floor_text = f"±{floor * 100:.1f}%" + (" (noise)" if floor > settings.threshold else "")
    if ci is None:
        return out(AMBIGUOUS, "interval unbounded: A's mean cannot be told from zero")
    low, high = ci
    ci_text = f"CI {_pct(low)}..{_pct(high)}"
    if 1.0 - floor <= low and high <= 1.0 + floor:
        return out(SAME, f"{ci_text} within {floor_text}")
    significant = perm.p < settings.alpha
    if not significant:
        if perm.min_p >= settings.alpha:
            return out(
                AMBIGUOUS,
                f"{sa.n} vs {sb.n} samples: a permutation test cannot go below"
                f" p={perm.min_p:.2g}; more repetitions",
            )
        return out(
            AMBIGUOUS, f"not significant (p={perm.p:.2g}), {ci_text} wider than {floor_text}"
        )
    if low < 1.0 + floor and high > 1.0 - floor:
        return out(AMBIGUOUS, f"significant (p={perm.p:.2g}) but {ci_text} reaches {floor_text}")
    if mw is not None and mw.p >= settings.alpha:
        return out(AMBIGUOUS, f"means differ (p={perm.p:.2g}) but Mann-Whitney does not")
    better = (ratio > 1.0) == hib
    return out(FASTER if better else SLOWER, f"p={perm.p:.2g}, {ci_text}, floor {floor_text}")


@dataclass(frozen=True)
class Pairing:
    pairs: list[tuple[Group, Group]]
    only_a: list[Group]
    only_b: list[Group]


def _match_key(g: Group, other_carries: set[str]) -> tuple:
    """What B's group must share with A's to be judged against it. The network path is left
    out: a result measured over another path is paired, then judged not comparable (with
    the reason) rather than silently unmatched. A declared dimension constant within its run
    (in Group.identity, not in dims) counts when the other run's results carry it too: 1 KB
    files in A and 50 KB in B are two tests, not a slowdown; a run stored before the label
    existed still pairs."""
    k = g.key
    dims = dict(k.dims)
    dims.update((n, v) for n, v in g.identity if n not in dims and n in other_carries)
    return (k.suite, k.test_case, k.metric, without_paths(tuple(sorted(dims.items()))), k.scenario)


def pair(
    groups_a: list[Group],
    groups_b: list[Group],
    platform_a: str | None = None,
    platform_b: str | None = None,
    all_metrics: bool = False,
) -> Pairing:
    """Target groups of A and B that measure the same thing: the same test case, metric,
    dims and scenario, on platform_a / platform_b (or, when None, on the same platform).
    Solo-peak cells are references, not results: left out."""

    def keep(g: Group, platform: str | None) -> bool:
        return (
            g.key.role == "target"
            and g.key.scenario != SOLO_PEAK_SCENARIO
            and (all_metrics or g.primary)
            and (platform is None or g.key.platform == platform)
        )

    def carried(groups: list[Group]) -> dict[str, set[str]]:
        """test case -> the dimension labels its results carry (swept or constant)."""
        out: dict[str, set[str]] = {}
        for g in groups:
            out.setdefault(g.key.test_case, set()).update(n for n, _ in g.identity)
        return out

    def keyed(groups: list[Group], platform: str | None, other: dict) -> dict[tuple, Group]:
        same_platform = platform is None
        return {
            (
                *_match_key(g, other.get(g.key.test_case, set())),
                g.key.platform if same_platform else "",
            ): g
            for g in groups
        }

    fa = [g for g in groups_a if keep(g, platform_a)]
    fb = [g for g in groups_b if keep(g, platform_b)]
    ka, kb = keyed(fa, platform_a, carried(fb)), keyed(fb, platform_b, carried(fa))
    return Pairing(
        [(ka[k], kb[k]) for k in ka if k in kb],
        [g for k, g in ka.items() if k not in kb],
        [g for k, g in kb.items() if k not in ka],
    )


def compare_groups(
    groups_a: list[Group],
    groups_b: list[Group],
    platform_a: str | None = None,
    platform_b: str | None = None,
    settings: Settings = Settings(),
    all_metrics: bool = False,
) -> tuple[list[Outcome], Pairing]:
    pairing = pair(groups_a, groups_b, platform_a, platform_b, all_metrics)
    return [judge(a, b, settings) for a, b in pairing.pairs], pairing


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    return {v: sum(o.verdict == v for o in outcomes) for v in VERDICTS}
