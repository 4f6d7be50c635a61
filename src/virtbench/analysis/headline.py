"""The answer first: one sentence per non-baseline platform · scenario, from the suite
scores' verdicts and the test cases' (the same verdicts every table shows)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .groups import Group, GroupKey
from .normalize import Comparison
from .ratios import FASTER, SAME, SLOWER, UNDECIDED
from .scores import GeoMean

AUTO_HINT = "run with `--repetitions auto`"


@dataclass(frozen=True)
class Headline:
    platform: str
    scenario: str
    text: str  # the sentence, without the platform · scenario it is about
    undecided: int  # primary test cases without a verdict
    total: int


def _pct(x: float) -> str:
    return f"{abs(x - 1.0) * 100.0:.1f}"


def _suite_part(g: GeoMean) -> tuple[str, str]:
    """(outcome, phrase) of one suite score."""
    assert g.value is not None
    if g.decision in (FASTER, SLOWER) and g.low is not None and g.high is not None:
        lo, hi = sorted((abs(g.low - 1.0) * 100.0, abs(g.high - 1.0) * 100.0))
        return g.decision, f"{g.suite} {_pct(g.value)}% {g.decision} [{lo:.1f}–{hi:.1f}%]"
    if g.low is None or g.high is None:
        return UNDECIDED, f"{g.suite} ×{g.value:.3f} (no interval)"
    return g.decision, f"{g.suite} ×{g.value:.3f} [{g.low:.3f}–{g.high:.3f}]"


def _within(gs: list[GeoMean]) -> str:
    """How close "same" is: the widest interval's reach, and the floor that judged it (an
    A/A floor can be wide on a noisy host: "same" then means no more than that)."""
    widest = max(max(1.0 - (g.low or 1.0), (g.high or 1.0) - 1.0) for g in gs)
    floor = max(g.verdict.floor for g in gs if g.verdict is not None)
    measured = any(g.verdict is not None and g.verdict.floor_source for g in gs)
    return f"95% CI within ±{widest * 100.0:.1f}%, floor ±{floor * 100.0:.1f}%" + (
        " from A/A" if measured else ""
    )


def headlines(
    geomeans: Iterable[GeoMean],
    comparisons: Mapping[GroupKey, Comparison],
    groups: Iterable[Group],
    baseline: str,
    repetitions: int | None = None,
) -> list[Headline]:
    """Per non-baseline (platform, scenario): what its suite scores say, then how many of
    its test cases this run could not decide, and what would."""
    per_cfg: dict[tuple[str, str], list[GeoMean]] = {}
    for g in geomeans:
        if g.suite != "all" and g.value is not None:
            per_cfg.setdefault((g.platform, g.scenario), []).append(g)
    cases: dict[tuple[str, str], list[Comparison]] = {}
    invalid: dict[tuple[str, str], int] = {}
    for grp in groups:
        k = grp.key
        if k.platform == baseline or k.role != "target" or not grp.primary:
            continue
        c = comparisons.get(k)
        if c is not None:
            cases.setdefault((k.platform, k.scenario), []).append(c)
            invalid[(k.platform, k.scenario)] = invalid.get((k.platform, k.scenario), 0) + (
                grp.n_invalid
            )
    out = []
    for cfg in dict.fromkeys([*per_cfg, *cases]):
        parts: list[str] = []
        suites = per_cfg.get(cfg, [])
        same = [g for g in suites if g.decision == SAME]
        if same:
            names = " and ".join(g.suite for g in same)
            parts.append(f"same as {baseline} on {names} ({_within(same)})")
        parts += [_suite_part(g)[1] for g in suites if g.decision != SAME]
        cs = cases.get(cfg, [])
        undecided = sum(c.decision == UNDECIDED for c in cs)
        if undecided:
            why = []
            if repetitions is not None and repetitions < 5:
                why.append(f"{repetitions} repetitions: {AUTO_HINT}")
            if invalid.get(cfg):
                why.append(f"{invalid[cfg]} invalid or disturbed samples left out")
            reason = f" ({'; '.join(why)})" if why else ""
            parts.append(f"undecided: {undecided} of {len(cs)} test cases{reason}")
        if not parts:
            parts.append("no ratio to the baseline")
        out.append(Headline(cfg[0], cfg[1], "; ".join(parts), undecided, len(cs)))
    return out
