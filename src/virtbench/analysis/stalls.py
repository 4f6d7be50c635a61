"""Maxima and stalls: a maximum made by one stall says nothing about a platform, so any
ratio of maxima it enters is undecided, never "better" or "worse" (issue 38: a TCG VM read
x14 "better" than native on the pinned tick maximum because one stall sat in native's).

Two signs of one stall: the latency probe's own classification (label
`rt_throttle_ambiguous_us`: a stall at no throttling boundary, kept in the maximum; see
workloads/latency.py) reaching the sample's maximum, or one round's maximum STALL_FACTOR
times the median of the group's other rounds."""

from __future__ import annotations

import re
import statistics
from typing import TYPE_CHECKING, Any

from .. import labelkeys
from . import ratios

if TYPE_CHECKING:
    from .groups import Group

STALL_FACTOR = 5.0  # one round this many times the others' median: that round had a stall
MIN_ROUNDS = 3  # a median of the other rounds needs two of them
_MAXIMUM = re.compile(r"(^|_)max(_|$)")  # max_us, raw_max_us, latency_max_ms; not max_connect


def is_maximum(metric: str) -> bool:
    return bool(_MAXIMUM.search(metric)) and not metric.startswith("max_connect")


def sample_stall(value: float, labels: dict[str, Any]) -> float | None:
    """The stall (µs) that is this sample's maximum, as the probe classified it."""
    amb = labels.get(labelkeys.RT_THROTTLE_AMBIGUOUS_US)
    try:
        return float(amb) if amb and value >= float(amb) else None
    except (TypeError, ValueError):
        return None


def one_stall(g: Group) -> str:
    """Why g's maximum is one stall, '' when it is not (or g is no maximum)."""
    if not is_maximum(g.key.metric):
        return ""
    where = f"{g.key.platform} · {g.key.scenario}"
    if g.stalls:
        rep, stall = g.stalls[0]
        return f"{where} repetition {rep}: a stall of {stall:g} µs at no throttling boundary"
    per = ratios.per_round(g.values, g.repetitions)
    if len(per) >= MIN_ROUNDS:
        top = max(per, key=lambda r: per[r])
        rest = statistics.median(v for r, v in per.items() if r != top)
        if rest > 0 and per[top] >= STALL_FACTOR * rest:
            return (
                f"{where}: round {top}'s maximum {per[top]:g} is {per[top] / rest:.1f}x the "
                "other rounds' median"
            )
    return ""


def guard(verdict: ratios.Verdict, x: Group, base: Group) -> ratios.Verdict:
    """The verdict on a ratio of x to base, undecided when a maximum of either is one stall."""
    why = one_stall(x) or one_stall(base)
    if not why or verdict.outcome == ratios.UNDECIDED and why in verdict.reason:
        return verdict
    return ratios.Verdict(
        ratios.UNDECIDED,
        f"a maximum driven by one stall ({why})",
        verdict.floor,
        verdict.p_adjusted,
        verdict.floor_source,
    )
