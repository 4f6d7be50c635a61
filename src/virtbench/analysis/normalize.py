"""Normalization of every group against the campaign's baseline platform.

ratio       oriented so that > 1 means better than the baseline, for both directions:
            higher-is-better: mean / baseline_mean; lower-is-better: baseline_mean / mean.
overhead %  how much worse the raw metric is than the baseline, in the metric's own
            direction (positive = worse): HIB (b - x) / b · 100, LIB (x - b) / b · 100.

The ratio's 95% CI comes from the delta method in log space:
var(log ratio) ≈ cv_x² / n_x + cv_b² / n_b, with Welch-Satterthwaite degrees of freedom,
so the interval is asymmetric and never crosses zero. The overhead CI is the same interval
mapped through the (monotone) overhead formula.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..results import LOAD_PCT_LABEL, NET_PATH_LABEL, PATH_LABELS
from .groups import Group, GroupKey
from .stats import CONFIDENCE, t_critical, welch_df


@dataclass(frozen=True)
class Comparison:
    key: GroupKey
    baseline: GroupKey
    ratio: float
    log_var: float | None  # variance of log(ratio); None when a side has n < 2
    log_df: float | None  # its Welch-Satterthwaite degrees of freedom
    higher_is_better: bool
    ratio_low: float | None = None
    ratio_high: float | None = None

    @property
    def overhead_pct(self) -> float:
        return overhead_from_ratio(self.ratio, self.higher_is_better)

    @property
    def decision(self) -> str:
        return decision(self.ratio_low, self.ratio_high)

    @property
    def overhead_range(self) -> tuple[float, float] | None:
        if self.ratio_low is None or self.ratio_high is None:
            return None
        a = overhead_from_ratio(self.ratio_low, self.higher_is_better)
        b = overhead_from_ratio(self.ratio_high, self.higher_is_better)
        return (min(a, b), max(a, b))


# what a ratio's 95% interval says about "differs from the baseline"
BETTER, WORSE, UNDECIDED, NO_CI = "better", "worse", "undecided", "no CI"


def decision(low: float | None, high: float | None) -> str:
    """BETTER or WORSE when the interval lies entirely above or below 1, UNDECIDED when it
    includes 1 (this run cannot tell the two apart), NO_CI without an interval."""
    if low is None or high is None:
        return NO_CI
    if low > 1:
        return BETTER
    if high < 1:
        return WORSE
    return UNDECIDED


def overhead_from_ratio(ratio: float, higher_is_better: bool) -> float:
    """Overhead % from an oriented ratio (see module docstring)."""
    if higher_is_better:
        return (1.0 - ratio) * 100.0  # ratio = x/b
    return (1.0 / ratio - 1.0) * 100.0  # ratio = b/x, so x/b = 1/ratio


def log_terms(g: Group) -> tuple[float, float] | None:
    """(variance of log(mean), df) of a group's mean, or None without spread."""
    s = g.summary
    if s.n < 2 or s.stdev is None or not s.mean:
        return None
    cv = s.stdev / abs(s.mean)
    return (cv * cv / s.n, float(s.n - 1))


def compare(x: Group, base: Group, confidence: float = CONFIDENCE) -> Comparison | None:
    """x against base; None when either mean is missing or not positive (no ratio)."""
    mx, mb = x.summary.mean, base.summary.mean
    if mx is None or mb is None or mx <= 0 or mb <= 0:
        return None
    hib = x.higher_is_better
    ratio = mx / mb if hib else mb / mx
    tx, tb = log_terms(x), log_terms(base)
    if x.key == base.key:
        # the baseline against itself is exactly 1, not a noisy estimate of 1
        return Comparison(x.key, base.key, 1.0, 0.0, None, hib, 1.0, 1.0)
    if tx is None or tb is None:
        return Comparison(x.key, base.key, ratio, None, None, hib)
    var = tx[0] + tb[0]
    df = welch_df([tx[0], tb[0]], [tx[1], tb[1]])
    if df is None:
        return Comparison(x.key, base.key, ratio, None, None, hib)
    half = t_critical(df, confidence) * math.sqrt(var)
    return Comparison(
        x.key, base.key, ratio, var, df, hib, ratio * math.exp(-half), ratio * math.exp(half)
    )


class Comparisons(Mapping[GroupKey, Comparison]):
    """Group key -> its comparison with the baseline group of the same test, each made when
    first asked for. A ratio's interval costs a Student-t quantile of its own Welch df
    (~0.5 ms), and most groups of a co-location run (10^5 per-step figures) are in no table."""

    def __init__(self, pairs: dict[GroupKey, tuple[Group, Group]]) -> None:
        self._pairs = pairs  # key -> (its group, the baseline's), in the groups' order
        self._made: dict[GroupKey, Comparison | None] = {}

    def _made_for(self, key: GroupKey) -> Comparison | None:
        if key not in self._made:
            pair = self._pairs.get(key)
            self._made[key] = compare(*pair) if pair is not None else None
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


def against_baseline(groups: list[Group], baseline: str | None) -> Mapping[GroupKey, Comparison]:
    """Every group that has a matching baseline group (same test, scenario, role, dims) and
    a ratio to it (`compare`)."""
    if not baseline:
        return {}
    by_key = {g.key: g for g in groups}
    pairs = {}
    for g in groups:
        base = by_key.get(g.key.on(baseline))
        if base is None or own_peak_load(g) or own_peak_load(base):
            continue
        pairs[g.key] = (g, base)
    return Comparisons(pairs)


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
