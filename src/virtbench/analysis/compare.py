"""A against B, per test case: the ratio with its interval and a verdict a CI job can act on.

ratio       B against A from `ratios.py`, the one method the report and the scores use too:
            geometric means; within one run (two platforms of it) paired over its rounds,
            across two runs unpaired (Welch on the logs). Shown raw (B/A, not oriented).
verdict     `ratios.judge` on the oriented ratio (faster = better in the metric's direction):
            faster / slower / same / undecided, with Holm's correction over the test cases
            compared (a regression gate fails on one false call, so the family-wise error is
            what is bounded). The floor is a test's A/A floor measured on A's host where one
            exists (`floors.py`), else --threshold.
Two runs    carry between-run noise (a reboot, another placement, another day) that neither
            run measured: their intervals cover only each run's own repetitions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..results import SOLO_PEAK_SCENARIO
from . import ratios
from .groups import Group
from .normalize import path_mismatch, path_of, raw_estimate, without_paths
from .ratios import FASTER, SAME, SLOWER, UNDECIDED, VERDICTS, Ratio
from .stats import Summary, summarize

__all__ = ["FASTER", "SAME", "SLOWER", "UNDECIDED", "VERDICTS"]
DEFAULT_THRESHOLD = ratios.DEFAULT_FLOOR
DEFAULT_ALPHA = ratios.DEFAULT_ALPHA
BETWEEN_RUNS = (
    "two runs: each interval covers its own run's repetitions only, not the noise between"
    " runs (another boot, placement or day); an A/A pair of runs on this host measures it"
)

# A's group -> (its noise floor, where the floor came from)
FloorOf = Callable[[Group], tuple[float, str]]


@dataclass(frozen=True)
class Settings:
    threshold: float = DEFAULT_THRESHOLD  # the floor without a measured one, a fraction
    alpha: float = DEFAULT_ALPHA

    @property
    def confidence(self) -> float:
        """The CI's level matches the test's: 95% for alpha = 0.05."""
        return 1.0 - self.alpha


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
    estimate: Ratio | None  # B / A, raw
    floor: float  # the effect-size floor applied, a fraction
    verdict: str
    reason: str
    p: float | None = None
    p_holm: float | None = None
    floor_source: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.estimate is None else self.estimate.value

    @property
    def ratio_ci(self) -> tuple[float, float] | None:
        e = self.estimate
        return None if e is None or e.low is None or e.high is None else (e.low, e.high)

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0

    @property
    def method(self) -> str:
        return "no ratio" if self.estimate is None else self.estimate.method


def judge_all(
    pairs: list[tuple[Group, Group]],
    settings: Settings = Settings(),
    paired: bool = False,
    floor_of: FloorOf | None = None,
) -> list[Outcome]:
    """Every pair's verdict, Holm-corrected over the pairs that have a ratio."""
    ests = [raw_estimate(b, a, paired) for a, b in pairs]  # B / A
    adjusted = ratios.holm(None if e is None else e.p for e in ests)
    out = []
    for (a, b), e, p_holm in zip(pairs, ests, adjusted, strict=True):
        floor, source = floor_of(a) if floor_of else (settings.threshold, "")
        out.append(_outcome(a, b, e, p_holm, floor, source, settings))
    return out


def _outcome(
    a: Group,
    b: Group,
    e: Ratio | None,
    p_holm: float | None,
    floor: float,
    source: str,
    settings: Settings,
) -> Outcome:
    sa, sb = summarize(a.values), summarize(b.values)

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
            a.higher_is_better,
            sa,
            sb,
            e,
            floor,
            verdict,
            reason,
            None if e is None else e.p,
            p_holm,
            source,
        )

    pa, pb = path_of(a), path_of(b)
    if pa is not None and pb is not None and pa != pb:
        return out(
            UNDECIDED, path_mismatch(f"B ({b.key.platform})", pb, f"A ({a.key.platform})", [pa])
        )
    if sa.n >= 2 and sb.n >= 2 and len(set(a.values) | set(b.values)) == 1:
        return out(SAME, "every value equal")
    oriented = None if e is None else e.oriented(a.higher_is_better)
    v = ratios.judge(oriented, floor, source, settings.alpha, p_holm)
    invalid = a.n_invalid + b.n_invalid
    extra = f" ({invalid} invalid left out)" if invalid and v.outcome == UNDECIDED else ""
    return out(v.outcome, v.reason + extra)


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
    paired: bool = False,
    floor_of: FloorOf | None = None,
) -> tuple[list[Outcome], Pairing]:
    """`paired`: A and B are two platforms of one run, measured in the same rounds."""
    pairing = pair(groups_a, groups_b, platform_a, platform_b, all_metrics)
    return judge_all(pairing.pairs, settings, paired, floor_of), pairing


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    return {v: sum(o.verdict == v for o in outcomes) for v in VERDICTS}
