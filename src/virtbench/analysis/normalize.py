"""Normalization of every group against the campaign's baseline platform.

ratio       oriented so that > 1 means better than the baseline, for both directions:
            higher-is-better: value / baseline; lower-is-better: baseline / value. Its
            estimate, 95% interval and verdict come from `ratios.py` (paired over the run's
            rounds), the one method the report, the scores and `compare` share.
overhead %  how much worse the raw metric is than the baseline, in the metric's own
            direction (positive = worse): HIB (b - x) / b · 100, LIB (x - b) / b · 100.
            Its interval is the ratio's mapped through that (monotone) formula.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..results import LOAD_PCT_LABEL, NET_PATH_LABEL, PATH_LABELS
from . import ratios, stalls
from .groups import Group, GroupKey
from .ratios import Ratio, Verdict

# a test's noise floor on this host and where it comes from (analysis/floors.py)
FloorOf = Callable[[GroupKey], tuple[float, str]]


def default_floor(_key: GroupKey) -> tuple[float, str]:
    return ratios.DEFAULT_FLOOR, ""


@dataclass(frozen=True)
class Comparison:
    key: GroupKey
    baseline: GroupKey
    estimate: Ratio  # oriented: > 1 = better than the baseline
    higher_is_better: bool
    verdict: Verdict

    @property
    def ratio(self) -> float:
        return self.estimate.value

    @property
    def ratio_low(self) -> float | None:
        return self.estimate.low

    @property
    def ratio_high(self) -> float | None:
        return self.estimate.high

    @property
    def overhead_pct(self) -> float:
        return overhead_from_ratio(self.ratio, self.higher_is_better)

    @property
    def decision(self) -> str:
        """faster, slower, same or undecided (ratios.VERDICTS)."""
        return self.verdict.outcome

    @property
    def overhead_range(self) -> tuple[float, float] | None:
        if self.ratio_low is None or self.ratio_high is None:
            return None
        a = overhead_from_ratio(self.ratio_low, self.higher_is_better)
        b = overhead_from_ratio(self.ratio_high, self.higher_is_better)
        return (min(a, b), max(a, b))


def overhead_from_ratio(ratio: float, higher_is_better: bool) -> float:
    """Overhead % from an oriented ratio (see module docstring)."""
    if higher_is_better:
        return (1.0 - ratio) * 100.0  # ratio = x/b
    return (1.0 / ratio - 1.0) * 100.0  # ratio = b/x, so x/b = 1/ratio


def raw_estimate(x: Group, base: Group, paired: bool = True) -> Ratio | None:
    """x's values over base's, from their rounds (not oriented); None without a ratio."""
    return ratios.ratio(
        ratios.per_round(x.values, x.repetitions),
        ratios.per_round(base.values, base.repetitions),
        paired,
    )


def estimate(x: Group, base: Group, paired: bool = True) -> Ratio | None:
    """x against base, oriented (> 1 = better); None without a ratio. `paired`: both groups
    come from one run, whose repetition numbers are its rounds."""
    if x.key == base.key:
        # the baseline against itself is exactly 1, not a noisy estimate of 1
        n = x.summary.n
        return Ratio(1.0, 1.0, 1.0, 1.0, n, True, 0.0, None, {}, n, n)
    r = raw_estimate(x, base, paired)
    return None if r is None else r.oriented(x.higher_is_better)


def compare(
    x: Group, base: Group, floor: tuple[float, str] = (ratios.DEFAULT_FLOOR, "")
) -> Comparison | None:
    """x against base, judged alone (no family correction); None without a ratio."""
    r = estimate(x, base)
    if r is None:
        return None
    verdict = stalls.guard(ratios.judge(r, *floor), x, base)
    return Comparison(x.key, base.key, r, x.higher_is_better, verdict)


def family(key: GroupKey, primary: bool) -> tuple | None:
    """The test cases judged together (Holm): a platform · scenario's primary target
    results. Other figures (secondary metrics, neighbours, clients) are context, judged
    alone."""
    if not primary or key.role != "target":
        return None
    return (key.platform, key.scenario)


class Comparisons(Mapping[GroupKey, Comparison]):
    """Group key -> its comparison with the baseline group of the same test, each made when
    first asked for (most groups of a co-location run, 10^5 per-step figures, are in no
    table). A primary result's verdict is made with its family's (Holm over the family)."""

    def __init__(
        self, pairs: dict[GroupKey, tuple[Group, Group]], floor_of: FloorOf = default_floor
    ) -> None:
        self._pairs = pairs  # key -> (its group, the baseline's), in the groups' order
        self._floor_of = floor_of
        self._estimates: dict[GroupKey, Ratio | None] = {}
        self._made: dict[GroupKey, Comparison | None] = {}
        self._families: dict[tuple, list[GroupKey]] = {}
        for k, (g, _b) in pairs.items():
            fam = family(k, g.primary)
            if fam is not None:
                self._families.setdefault(fam, []).append(k)

    def _estimate(self, key: GroupKey) -> Ratio | None:
        if key not in self._estimates:
            pair = self._pairs.get(key)
            self._estimates[key] = estimate(*pair) if pair is not None else None
        return self._estimates[key]

    def _made_for(self, key: GroupKey) -> Comparison | None:
        if key in self._made:
            return self._made[key]
        pair = self._pairs.get(key)
        if pair is None or self._estimate(key) is None:
            self._made[key] = None
            return None
        fam = family(key, pair[0].primary)
        members = self._families.get(fam, [key]) if fam is not None else [key]
        ests = [self._estimate(k) for k in members]
        adjusted = ratios.holm(None if e is None else e.p for e in ests)
        for k, e, p in zip(members, ests, adjusted, strict=True):
            if e is None:
                self._made[k] = None
                continue
            g = self._pairs[k][0]
            floor, source = self._floor_of(k)
            adjust = p if len(members) > 1 else None
            verdict = ratios.judge(e, floor, source, p_adjusted=adjust)
            verdict = stalls.guard(
                verdict, g, self._pairs[k][1]
            )  # maxima: one stall decides nothing
            self._made[k] = Comparison(k, self._pairs[k][1].key, e, g.higher_is_better, verdict)
        return self._made[key]

    def __getitem__(self, key: GroupKey) -> Comparison:
        c = self._made_for(key)
        if c is None:  # no baseline group, or no ratio (a mean missing or not positive)
            raise KeyError(key)
        return c

    def __iter__(self) -> Iterator[GroupKey]:
        return (k for k in self._pairs if self._made_for(k) is not None)

    def __len__(self) -> int:
        return sum(1 for _k in self)


def against_baseline(
    groups: list[Group], baseline: str | None, floor_of: FloorOf = default_floor
) -> Mapping[GroupKey, Comparison]:
    """Every group that has a matching baseline group (same test, scenario, role, dims) and
    a ratio to it."""
    if not baseline:
        return {}
    by_key = {g.key: g for g in groups}
    pairs = {}
    for g in groups:
        base = by_key.get(g.key.on(baseline))
        if base is None or own_peak_load(g) or own_peak_load(base):
            continue
        pairs[g.key] = (g, base)
    return Comparisons(pairs, floor_of)


# --- results whose load was relative to each platform's own peak ---------------------------
def own_peak_load(g: Group) -> bool:
    """A result measured at `load=PCT` % of its own platform's solo peak (co-location): every
    platform was offered a different rate, so a ratio would compare their peaks, not a
    slowdown at one load."""
    return g.labels.get(LOAD_PCT_LABEL) is not None


OWN_PEAK = "own-peak load"


# --- results measured over different paths ---------------------------------------------------
def path_of(g: Group) -> str | None:
    """The network path a group's client took (label net_path), None if not recorded."""
    value = g.key.dim(NET_PATH_LABEL)
    return str(value) if value is not None else g.labels.get(NET_PATH_LABEL)


def without_paths(dims: tuple[tuple[str, object], ...]) -> tuple[tuple[str, object], ...]:
    return tuple((k, v) for k, v in dims if k not in PATH_LABELS)


def path_mismatch(platform: str, path: str, other: str, other_paths: list[str]) -> str:
    """Why two results measured over different network paths get no ratio."""
    return (
        f"not comparable: {other} was measured over net_path={'/'.join(other_paths)},"
        f" {platform} over net_path={path}; a ratio across network paths measures the path,"
        ' not the platform (client_path = "bridge" puts every platform on one path)'
    )


def incomparable(groups: list[Group], baseline: str | None) -> dict[GroupKey, str]:
    """Groups that have no ratio to the baseline only because the baseline measured the
    same result over another network path, or because each platform was offered a share of
    its own peak: key -> the reason (shown where the ratio would be)."""
    if not baseline:
        return {}
    keys = {g.key for g in groups}

    def test(k: GroupKey) -> tuple:
        return (k.suite, k.test_case, k.scenario, k.role, k.metric, without_paths(k.dims))

    base_paths: dict[tuple, list[str]] = {}
    for g in groups:
        if g.key.platform == baseline and (p := path_of(g)) is not None:
            base_paths.setdefault(test(g.key), []).append(p)
    out: dict[GroupKey, str] = {}
    for g in groups:
        if g.key.platform != baseline and own_peak_load(g):
            out[g.key] = (
                f"{OWN_PEAK}: {g.key.platform} was offered {g.labels[LOAD_PCT_LABEL]} % of its"
                " own solo peak (load=PCT), each platform a different rate; a ratio would"
                " compare the peaks, not a slowdown at one load"
            )
            continue
        if g.key.platform == baseline or g.key.on(baseline) in keys:
            continue
        path, others = path_of(g), base_paths.get(test(g.key))
        if path is not None and others and path not in others:
            out[g.key] = path_mismatch(g.key.platform, path, baseline, sorted(set(others)))
    return out
