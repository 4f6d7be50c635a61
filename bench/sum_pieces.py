#!/usr/bin/env python3
"""A campaign's run time from one-platform pieces (issue 12), as the whole run would spend it.

    python bench/sum_pieces.py colocation-web /work/runs/cw-native /work/runs/cw-container \
        /work/runs/cw-vm-virtio-a /work/runs/cw-vm-virtio-b ...

Each results directory holds one finished run of a piece written by bench/one_platform.py
(optionally one `--scenarios` part of a platform) and measured by bench/campaign_runtime.py.
Reads the stores only; measures nothing. A piece's wall time is more than its platform's
share of the whole run, and it is taken apart from the stored cell times:

- solo peaks: each piece measures again the solo peaks of the neighbours it uses; the whole
  run measures each platform's once. Every solo-peak cell is taken out of its piece and each
  platform's set is added back once (its ok cells' mean time x the most ok ones one piece
  ran; a failed attempt measured again is not counted);
- warm-up and provisioning (the wall time no cell covers): two parts of one platform repeat
  it; the whole run does it once per platform, so only the largest part's is kept.

Checks the pieces against the campaign's own cells (platform, scenario, repetition, test
case) and names what is missing or not ok; the sum is printed only when every cell is there
(`--partial` prints it anyway, marked as such).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from _campaign import CellTime, latest_run
from campaign_runtime import summary

from virtbench.campaign import expand, loader
from virtbench.errors import VirtbenchError
from virtbench.results import SOLO_PEAK_SCENARIO
from virtbench.store.db import DB_NAME


@dataclass(frozen=True)
class Span:
    platform: str
    scenario: str
    repetition: int
    status: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Piece:
    where: str
    run_id: str
    status: str
    wall: float  # the run's started_at..finished_at as stored
    spans: tuple[Span, ...]

    @property
    def targets(self) -> set[str]:
        return {s.platform for s in self.spans if s.scenario != SOLO_PEAK_SCENARIO}

    def peaks(self) -> list[Span]:
        return [s for s in self.spans if s.scenario == SOLO_PEAK_SCENARIO]

    def uncovered(self) -> float:
        """Wall time inside no cell: warm-up, provisioning, teardown, the run's own start."""
        return self.wall - covered(self.spans)


def covered(spans: Iterable[Span]) -> float:
    """Length of the union of the spans (a neighbour's solo peaks run inside a cell)."""
    total, end = 0.0, float("-inf")
    for s in sorted(spans, key=lambda s: s.start):
        if s.end > end:
            total += s.end - max(s.start, end)
            end = s.end
    return total


@dataclass(frozen=True)
class Sum:
    total: float
    own: dict[str, float]  # platform -> its cells + one warm-up and provisioning
    peak_sets: dict[str, tuple[int, float, float]]  # platform -> (cells, mean s, stdev s)
    repeated_overhead: float  # warm-up and provisioning of extra parts, taken out


def summed(pieces: list[Piece]) -> Sum:
    """The whole run's time from its pieces (module docstring)."""
    parts: dict[str, list[Piece]] = defaultdict(list)
    for p in pieces:
        if len(p.targets) != 1:
            raise VirtbenchError(
                f"{p.where}: a piece runs one platform's cells; run {p.run_id} has "
                f"{', '.join(sorted(p.targets)) or 'none'}"
            )
        parts[next(iter(p.targets))].append(p)
    own: dict[str, float] = {}
    repeated = 0.0
    for platform, ps in parts.items():
        overheads = [p.uncovered() for p in ps]
        extra = sum(overheads) - max(overheads)
        repeated += extra
        own[platform] = sum(p.wall - sum(s.seconds for s in p.peaks()) for p in ps) - extra
    times: dict[str, list[float]] = defaultdict(list)
    most: Counter[str] = Counter()
    for p in pieces:
        # a peak that failed (a TCG guest's NIC stalled) and was measured again is one peak
        good = [s for s in p.peaks() if s.status == "ok"]
        for platform, n in Counter(s.platform for s in good).items():
            most[platform] = max(most[platform], n)
        for s in good:
            times[s.platform].append(s.seconds)
    peak_sets = {
        platform: (
            most[platform],
            statistics.mean(secs),
            statistics.stdev(secs) if len(secs) > 1 else 0.0,
        )
        for platform, secs in times.items()
    }
    total = sum(own.values()) + sum(n * mean for n, mean, _ in peak_sets.values())
    return Sum(total, own, peak_sets, repeated)


def missing(campaign_ref: str, pieces: list[Piece]) -> list[str]:
    """The campaign's cells no piece finished ok, per (platform, scenario): 'vm-e1000 solo
    3 of 3'. By repetition count: each scenario here runs one test case."""
    wanted = Counter(
        (c.platform.name, c.scenario, c.repetition)
        for c in expand.expand(loader.load(campaign_ref))
    )
    got = Counter(
        (s.platform, s.scenario, s.repetition)
        for p in pieces
        for s in p.spans
        if s.scenario != SOLO_PEAK_SCENARIO and s.status == "ok"
    )
    per: Counter[tuple[str, str]] = Counter()
    of: Counter[tuple[str, str]] = Counter()
    for (platform, scenario, rep), n in wanted.items():
        of[platform, scenario] += n
        per[platform, scenario] += max(0, n - got[platform, scenario, rep])
    return [f"{pl} {sc} {n} of {of[pl, sc]}" for (pl, sc), n in per.items() if n]


def read_piece(results: Path) -> Piece:
    latest = latest_run(results)
    if latest is None:
        raise VirtbenchError(
            f"{results}: no run stored (not a results directory, or {DB_NAME} empty)"
        )
    run, cells = latest
    if run["finished_at"] is None:
        raise VirtbenchError(f"{results}: run {run['run_id']} has not finished ({run['status']})")
    spans = tuple(
        Span(c.platform, c.scenario, c.repetition, c.status, c.started_at, c.finished_at)
        for c in cells
        if c.started_at is not None and c.finished_at is not None
    )
    return Piece(
        str(results), run["run_id"], run["status"], run["finished_at"] - run["started_at"], spans
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("campaign", help="the whole campaign (a built-in name or a .toml file)")
    ap.add_argument("pieces", nargs="+", type=Path, help="results directories, one piece each")
    ap.add_argument("--partial", action="store_true", help="sum even when cells are missing")
    args = ap.parse_args()
    try:
        pieces = [read_piece(p) for p in args.pieces]
        result = summed(pieces)
        gaps = missing(args.campaign, pieces)
    except VirtbenchError as exc:
        sys.exit(f"error: {exc}")
    for p in pieces:
        peaks = p.peaks()
        print(
            f"{p.where}: run {p.run_id} ({p.status}), {', '.join(sorted(p.targets))}: "
            f"{p.wall:.0f} s wall, {len(p.spans) - len(peaks)} cells + {len(peaks)} solo peaks "
            f"({sum(s.seconds for s in peaks):.0f} s), {p.uncovered():.0f} s in no cell"
        )
    for platform, secs in result.own.items():
        print(f"  {platform:<14} cells, one warm-up and provisioning: {secs:7.0f} s")
    for platform, (n, mean, sd) in result.peak_sets.items():
        print(
            f"  {platform:<14} {n} solo peaks once, {mean:.1f} s ± {sd:.1f} each: {n * mean:5.0f} s"
        )
    print(
        "  repeated warm-up and provisioning of extra parts, taken out: "
        f"{result.repeated_overhead:.0f} s"
    )
    print("per (platform, scenario), over the pieces:")
    print(
        "\n".join(
            summary(
                [
                    CellTime(s.platform, s.scenario, s.repetition, s.status, s.seconds)
                    for p in pieces
                    for s in p.spans
                ]
            )
        )
    )
    if gaps:
        print(f"missing or not ok ({len(gaps)}): " + "; ".join(gaps))
    if gaps and not args.partial:
        sys.exit(1)
    label = "partial sum (cells missing)" if gaps else "whole run"
    print(f"{label}: {result.total:.0f} s ({result.total / 3600:.2f} h)")


if __name__ == "__main__":
    main()
