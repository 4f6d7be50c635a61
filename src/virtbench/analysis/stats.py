"""Descriptive statistics and Student-t confidence intervals, without scipy.

The t quantile is computed exactly (to ~1e-10) by inverting the t CDF, which is expressed
through the regularized incomplete beta function (continued fraction, Lentz's method). This
works for any real degrees of freedom, so Welch-Satterthwaite df can be used directly.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
HIGH_CV = 0.10  # coefficient of variation above which a result is flagged as noisy


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Numerical Recipes 6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(ln_front)
    # the continued fraction converges fast only on this side of the mean
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` (> 0, may be fractional) degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (e.g. p=0.975, df=4 -> 2.776)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    lo, hi = 0.0, 2.0
    while t_cdf(hi, df) < p:  # bracket: the quantile grows fast for df near 1
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


# by (df, confidence): the quantile is ~200 incomplete-beta evaluations, and a run asks for
# the same few integer df once per group (10^5 groups of 3 repetitions in a co-location run)
@functools.lru_cache(maxsize=4096)
def t_critical(df: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided critical value: mean ± t_critical · standard error."""
    return t_quantile(0.5 + confidence / 2.0, df)


def welch_df(variances: Sequence[float], dfs: Sequence[float]) -> float | None:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance terms."""
    if any(d <= 0 for d in dfs):
        return None
    total = sum(variances)
    denom = sum(v * v / d for v, d in zip(variances, dfs, strict=True))
    if denom == 0:
        # all terms zero: the spread is exactly zero; df does not matter, use the smallest
        return min(dfs) if dfs else None
    return total * total / denom


@dataclass(frozen=True)
class Summary:
    """Statistics of the valid samples of one group. Fields are None when undefined."""

    n: int
    mean: float | None = None
    median: float | None = None
    stdev: float | None = None  # sample standard deviation (n - 1)
    minimum: float | None = None
    maximum: float | None = None
    ci_half: float | None = None  # half width of the confidence interval of the mean

    @property
    def cv(self) -> float | None:
        """Coefficient of variation (stdev / |mean|), as a fraction."""
        if self.stdev is None or not self.mean:
            return None
        return self.stdev / abs(self.mean)

    @property
    def ci_low(self) -> float | None:
        return None if self.ci_half is None or self.mean is None else self.mean - self.ci_half

    @property
    def ci_high(self) -> float | None:
        return None if self.ci_half is None or self.mean is None else self.mean + self.ci_half

    @property
    def sem(self) -> float | None:
        """Standard error of the mean."""
        return None if self.stdev is None else self.stdev / math.sqrt(self.n)

    @property
    def noisy(self) -> bool:
        cv = self.cv
        return cv is not None and cv > HIGH_CV


def summarize(values: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """n, mean, median, stdev, min, max and the Student-t CI of the mean."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return Summary(0)
    mean = statistics.fmean(vals)
    med = statistics.median(vals)
    if n == 1:
        # one sample has no spread: say so (None) instead of pretending it is exact
        return Summary(1, mean, med, None, vals[0], vals[0], None)
    sd = statistics.stdev(vals)
    half = t_critical(n - 1, confidence) * sd / math.sqrt(n)
    return Summary(n, mean, med, sd, min(vals), max(vals), half)
