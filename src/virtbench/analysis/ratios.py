"""One ratio, one interval, one verdict: every ratio virtbench prints (the report's tables,
the suite scores, `compare`, the JSON) comes from here.

Ratio       mean of X over mean of B (the means every table shows). Within one run both
            sides are measured in the same repetition rounds, so its spread is taken per round
            (log X_r - log B_r) and its interval is Student's t over the rounds (paired): a
            burst that slows one round widens the interval instead of shifting the ratio.
            Across runs (or when fewer than two rounds pair up) the two sides are independent:
            Welch's t on the log values. Either interval is centred on log(ratio).
Verdict     faster / slower: the whole interval lies beyond the noise floor on one side and
            the (Holm-adjusted, when a family is judged together) p-value is below alpha;
            same: the whole interval lies within ±floor; undecided otherwise, with the reason.
Floor       the smallest change worth calling: a test case's A/A floor measured on this host
            where one exists (`analysis/floors.py`), else DEFAULT_FLOOR.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .stats import CONFIDENCE, t_cdf, t_critical, welch_df

FASTER, SLOWER, SAME, UNDECIDED = "faster", "slower", "same", "undecided"
VERDICTS = (FASTER, SLOWER, SAME, UNDECIDED)
DEFAULT_FLOOR = 0.02  # a change under 2% is not called without a measured A/A floor
DEFAULT_ALPHA = 0.05  # two-sided, matching CONFIDENCE
MIN_ROUNDS = 2  # an interval needs a spread: two rounds (or two samples a side)


@dataclass(frozen=True)
class Ratio:
    """X against B in log space. `value`, `low`, `high` are ratios (not logs)."""

    value: float
    low: float | None  # None: no interval (a side with fewer than MIN_ROUNDS values)
    high: float | None
    p: float | None  # two-sided p of "the ratio is 1"
    n: int  # paired rounds, or the smaller side's count
    paired: bool
    log_se: float | None = None
    df: float | None = None
    # paired only: round -> log(X_r / B_r), what suite scores combine round by round
    rounds: dict[int, float] = field(default_factory=dict)
    n_x: int = 0
    n_b: int = 0

    def inverted(self) -> Ratio:
        """B against X: what a lower-is-better metric needs to read > 1 = better."""
        return Ratio(
            1.0 / self.value,
            None if self.high is None else 1.0 / self.high,
            None if self.low is None else 1.0 / self.low,
            self.p,
            self.n,
            self.paired,
            self.log_se,
            self.df,
            {r: -d for r, d in self.rounds.items()},
            self.n_b,
            self.n_x,
        )

    def oriented(self, higher_is_better: bool) -> Ratio:
        return self if higher_is_better else self.inverted()

    @property
    def method(self) -> str:
        if self.low is None:
            return f"no interval ({self.n_x} vs {self.n_b} valid values)"
        if self.paired:
            return f"paired over {self.n} rounds"
        return f"unpaired, {self.n_x} vs {self.n_b} values (Welch)"


def per_round(values: Sequence[float], repetitions: Sequence[int]) -> dict[int, float]:
    """round -> the mean of its values (a cell may give one test several samples)."""
    if len(repetitions) != len(values):  # a group built without its rounds: one a value
        repetitions = range(1, len(values) + 1)
    sums: dict[int, list[float]] = {}
    for v, r in zip(values, repetitions, strict=True):
        sums.setdefault(r, []).append(v)
    return {r: statistics.fmean(vs) for r, vs in sums.items()}


def _interval(mean: float, se: float, df: float, confidence: float) -> tuple[float, float, float]:
    """(low, high, p) of a log ratio: its t interval, and the p of "it is 0" (p < alpha
    exactly when the interval excludes 1)."""
    half = t_critical(df, confidence) * se
    p = (1.0 if mean == 0 else 0.0) if se == 0 else 2.0 * (1.0 - t_cdf(abs(mean) / se, df))
    return math.exp(mean - half), math.exp(mean + half), p


def ratio(
    x: dict[int, float],
    b: dict[int, float],
    paired: bool,
    confidence: float = CONFIDENCE,
) -> Ratio | None:
    """X against B from their per-round values (`per_round`); None when a value is not
    positive (no ratio of a zero or a negative). `paired`: both were measured in the same
    rounds of one run."""
    if not x or not b or min(x.values()) <= 0 or min(b.values()) <= 0:
        return None
    lx = {r: math.log(v) for r, v in x.items()}
    lb = {r: math.log(v) for r, v in b.items()}
    value = statistics.fmean(x.values()) / statistics.fmean(b.values())
    common = sorted(lx.keys() & lb.keys())
    if paired and len(common) >= MIN_ROUNDS:
        d = {r: lx[r] - lb[r] for r in common}
        se = statistics.stdev(d.values()) / math.sqrt(len(d))
        df = float(len(d) - 1)
        # the ratio over every value; the spread from the rounds both sides share
        low, high, p = _interval(math.log(value), se, df, confidence)
        return Ratio(value, low, high, p, len(d), True, se, df, d, len(x), len(b))
    if len(lx) < MIN_ROUNDS or len(lb) < MIN_ROUNDS:
        return Ratio(value, None, None, None, min(len(lx), len(lb)), False, n_x=len(x), n_b=len(b))
    vx = statistics.variance(lx.values()) / len(lx)
    vb = statistics.variance(lb.values()) / len(lb)
    df = welch_df([vx, vb], [len(lx) - 1, len(lb) - 1])
    assert df is not None  # both sides have at least MIN_ROUNDS values
    se = math.sqrt(vx + vb)
    low, high, p = _interval(math.log(value), se, df, confidence)
    return Ratio(value, low, high, p, min(len(lx), len(lb)), False, se, df, {}, len(x), len(b))


def weighted(
    entries: Sequence[tuple[float, Ratio]], confidence: float = CONFIDENCE
) -> tuple[Ratio | None, str]:
    """The weighted geometric mean of oriented ratios, and why it has no interval if not.

    Its interval comes from the rounds every entry shares: per round, Σ w·log r_r; then
    Student's t over those rounds. Noise arrives in time and hits every test case of a round
    together; summing each entry's variance as if they were independent made the interval far
    too narrow. Without two shared rounds, the entries' half-widths are added in log space
    (their correlation unknown, the worst case)."""
    if not entries:
        return None, "no valid ratio"
    logv = sum(w * math.log(r.value) for w, r in entries)
    value = math.exp(logv)
    n_x = min(r.n_x for _, r in entries)
    n_b = min(r.n_b for _, r in entries)
    shared = set.intersection(*(set(r.rounds) for _, r in entries))
    if all(r.paired for _, r in entries) and shared and len(shared) >= MIN_ROUNDS:
        series = [sum(w * r.rounds[k] for w, r in entries) for k in sorted(shared)]
        se = statistics.stdev(series) / math.sqrt(len(series))
        df = float(len(series) - 1)
        low, high, p = _interval(logv, se, df, confidence)
        rounds = dict(zip(sorted(shared), series, strict=True))
        return Ratio(value, low, high, p, len(series), True, se, df, rounds, n_x, n_b), ""
    if any(r.low is None or r.high is None for _, r in entries):
        why = "a ratio has fewer than 2 valid values on one side"
        return Ratio(value, None, None, None, 0, False, n_x=n_x, n_b=n_b), why
    half = sum(w * math.log(r.high / r.low) / 2.0 for w, r in entries)  # type: ignore[operator]
    low, high = math.exp(logv - half), math.exp(logv + half)
    p = 1.0 if low <= 1.0 <= high else min(r.p or 1.0 for _, r in entries)
    return Ratio(value, low, high, p, 0, False, n_x=n_x, n_b=n_b), (
        "rounds do not pair: the test cases' intervals added (their correlation unknown)"
    )


# --- the verdict -------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    outcome: str  # one of VERDICTS
    reason: str
    floor: float  # the floor applied, a fraction
    p_adjusted: float | None = None
    floor_source: str = ""  # where a floor other than DEFAULT_FLOOR came from ("A/A ...")


def _pct(r: float) -> str:
    return f"{(r - 1.0) * 100.0:+.1f}%"


def judge(
    r: Ratio | None,
    floor: float = DEFAULT_FLOOR,
    floor_source: str = "",
    alpha: float = DEFAULT_ALPHA,
    p_adjusted: float | None = None,
) -> Verdict:
    """The verdict on an ORIENTED ratio (> 1 = better). `p_adjusted`: the p-value after a
    family correction (Holm); the ratio's own p when None."""
    floor_text = f"±{floor * 100:.1f}%" + (f" ({floor_source})" if floor_source else "")

    def said(outcome: str, reason: str, p: float | None = None) -> Verdict:
        return Verdict(outcome, reason, floor, p, floor_source)

    if r is None:
        return said(UNDECIDED, "no ratio: a mean is missing, zero or negative")
    if r.low is None or r.high is None:
        return said(
            UNDECIDED,
            f"too few valid repetitions ({r.n_x} vs {r.n_b}; an interval needs {MIN_ROUNDS})",
        )
    p = r.p if p_adjusted is None else p_adjusted
    ci = f"95% CI {_pct(r.low)}..{_pct(r.high)}"
    if r.low == r.high == 1.0:
        return said(SAME, "every round equal", p)
    if 1.0 - floor <= r.low and r.high <= 1.0 + floor:
        return said(SAME, f"{ci} within the floor {floor_text}", p)
    beyond = r.low > 1.0 + floor or r.high < 1.0 - floor
    if beyond and p is not None and p < alpha:
        outcome = FASTER if r.value > 1.0 else SLOWER
        return said(outcome, f"{ci} beyond the floor {floor_text}, p={p:.2g}", p)
    if beyond:
        return said(
            UNDECIDED,
            f"{ci} beyond the floor, but p={p:.2g} after Holm's correction over its family",
            p,
        )
    if r.low > 1.0 or r.high < 1.0:
        return said(UNDECIDED, f"{ci}: a change, but not shown beyond {floor_text}", p)
    return said(UNDECIDED, f"{ci} reaches past the floor {floor_text}", p)


def holm(ps: Iterable[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None, and is not counted).

    Holm, not Benjamini-Hochberg: a regression gate fails on any one call, so what must be
    bounded is the chance of one false call among the family (family-wise), not their share."""
    ps = list(ps)
    idx = sorted((i for i, p in enumerate(ps) if p is not None), key=lambda i: ps[i])  # type: ignore[arg-type,return-value]
    m = len(idx)
    out: list[float | None] = [None] * len(ps)
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * ps[i]))  # type: ignore[operator]
        out[i] = running
    return out
