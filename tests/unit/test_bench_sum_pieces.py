"""bench/sum_pieces.py: a campaign's run time from one-platform pieces, as the whole run
would spend it (each platform's solo peaks and warm-up once)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # last: shadows nothing
import sum_pieces as sp  # noqa: E402

from virtbench.errors import VirtbenchError  # noqa: E402

PEAK = sp.SOLO_PEAK_SCENARIO


def span(platform: str, scenario: str, start: float, end: float, rep: int = 1) -> sp.Span:
    return sp.Span(platform, scenario, rep, "ok", start, end)


def piece(where: str, wall: float, *spans: sp.Span) -> sp.Piece:
    return sp.Piece(where, f"run-{where}", "finished", wall, spans)


def test_nested_spans_are_covered_once():
    spans = [span("a", "x", 0, 100), span("b", PEAK, 10, 40), span("a", "x", 150, 200)]
    assert sp.covered(spans) == 150


def test_peaks_count_once_per_platform_and_extra_parts_lose_their_warm_up():
    # part a: 2 own peaks (20 s each), 100 s warm-up gap, 2 cells of 200 s; wall 600
    part_a = piece(
        "a",
        600.0,
        span("vm", PEAK, 0, 20),
        span("vm", PEAK, 20, 40),
        span("vm", "solo", 140, 340),
        span("vm", "solo", 340, 540, rep=2),
    )
    # part b: the same 2 peaks again, a 120 s gap, one cell of 300 s with a neighbour's 2
    # peaks (10 s each) inside it; wall 460
    part_b = piece(
        "b",
        460.0,
        span("vm", PEAK, 0, 20),
        span("vm", PEAK, 20, 40),
        span("vm", "pair", 160, 460),
        span("ct", PEAK, 160, 170),
        span("ct", PEAK, 170, 180),
    )
    result = sp.summed([part_a, part_b])
    assert part_a.uncovered() == 160 and part_b.uncovered() == 120
    # vm's own: (600 - 40) + (460 - 60) less the smaller part's 120 s in no cell
    assert result.repeated_overhead == 120
    assert result.own == {"vm": 840}
    assert result.peak_sets == {"vm": (2, 20.0, 0.0), "ct": (2, 10.0, 0.0)}
    assert result.total == 840 + 40 + 20


def test_a_failed_peak_measured_again_is_not_a_peak_more():
    retried = piece(
        "r",
        300.0,
        span("vm", PEAK, 0, 20),
        sp.Span("vm", PEAK, 1, "failed", 20, 60),  # the guest's NIC stalled
        span("vm", PEAK, 60, 80),
        span("vm", "solo", 100, 300),
    )
    result = sp.summed([retried])
    assert result.peak_sets == {"vm": (2, 20.0, 0.0)}
    assert result.own == {"vm": 300 - 80} and result.total == 220 + 40


def test_a_piece_with_two_target_platforms_is_refused():
    both = piece("both", 10.0, span("a", "solo", 0, 1), span("b", "solo", 1, 2))
    with pytest.raises(VirtbenchError, match="both: a piece runs one platform's cells"):
        sp.summed([both])


def test_missing_names_every_cell_no_piece_finished_ok():
    native = piece("n", 10.0, *(span("native", "solo", 0, 1, rep=r) for r in (1, 2)))
    gaps = sp.missing("colocation-web", [native])
    assert "native solo 1 of 3" in gaps
    assert "container solo 3 of 3" in gaps
    assert "native identical 3 of 3" in gaps
