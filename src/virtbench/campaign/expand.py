"""Expand a campaign into its matrix of cells, in the order they will run."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..platforms.base import PlatformSpec
from .model import Campaign, Cell, TestSelection

if TYPE_CHECKING:
    from ..scenarios.base import Scenario

ORDERS = ("sequential", "random", "interleaved")


def expand(
    campaign: Campaign, repetitions: int | None = None, seed: int | None = None
) -> list[Cell]:
    """The cells in run order. The runner provisions a platform for each run of consecutive
    cells on it.

    - sequential: platform by platform, each provisioned once, in the file's order;
    - random: as sequential, shuffled within each platform by `seed` (reproducible);
    - interleaved: repetition rounds, each visiting every platform in turn (each platform is
      provisioned once per round), so drift in host load over the run hits every platform
      alike instead of masquerading as a platform difference.
    """
    reps = repetitions or campaign.settings.repetitions
    rng = random.Random(seed)
    order = campaign.settings.order
    blocks: list[tuple[PlatformSpec, list[tuple[TestSelection, Scenario, int]]]] = []
    if order == "interleaved":
        for rep in range(1, reps + 1):
            blocks += _round(campaign, {t.test_case: rep for t in campaign.tests})
    else:
        for spec in campaign.platforms:
            block = [
                (t, s, rep)
                for t in campaign.tests
                if campaign.runs(spec.name, t.suite)
                for s in campaign.scenarios
                for rep in range(1, reps + 1)
            ]
            if order == "random":
                rng.shuffle(block)
            blocks.append((spec, block))
    return _cells(blocks, 0)


Block = tuple[PlatformSpec, list[tuple[TestSelection, "Scenario", int]]]


def _round(campaign: Campaign, reps: dict[str, int]) -> list[Block]:
    """One repetition round of the test cases in `reps` (test case -> its repetition
    number), visiting every platform in turn, in the campaign's order."""
    tests = [t for t in campaign.tests if t.test_case in reps]
    return [
        (
            spec,
            [
                (t, s, reps[t.test_case])
                for t in tests
                if campaign.runs(spec.name, t.suite)
                for s in campaign.scenarios
            ],
        )
        for spec in campaign.platforms
    ]


def _cells(blocks: list[Block], first_seq: int) -> list[Cell]:
    cells: list[Cell] = []
    for spec, block in blocks:
        for t, scenario, rep in block:
            cells.append(
                Cell(
                    first_seq + len(cells),
                    spec,
                    t.suite,
                    t.test_case,
                    scenario.text(),
                    rep,
                    scenario,
                    dict(t.params),
                )
            )
    return cells


def extra_round(
    campaign: Campaign, reps: dict[str, int], first_seq: int, seed: int | None
) -> list[Cell]:
    """An adaptive run's next round, numbered from `first_seq`: interleaved whatever the
    campaign's order (every platform in turn, so drift hits them alike), shuffled within
    each platform for order = "random" (by `seed` and the round, reproducible)."""
    blocks = _round(campaign, reps)
    if campaign.settings.order == "random":
        rng = random.Random(f"{seed}/{max(reps.values(), default=0)}")
        for _spec, block in blocks:
            rng.shuffle(block)
    return _cells(blocks, first_seq)


def rebuild(campaign: Campaign, stored: list[tuple[int, str, str, str, int]]) -> list[Cell]:
    """The cells of stored rows (seq, platform, test case, scenario, repetition), for a
    resume of a run whose cells the campaign alone does not give (adaptive rounds)."""
    platforms = {p.name: p for p in campaign.platforms}
    tests = {t.test_case: t for t in campaign.tests}
    scenarios = {s.text(): s for s in campaign.scenarios}
    cells = []
    for seq, platform, test_case, scenario, rep in stored:
        t = tests[test_case]
        cells.append(
            Cell(
                seq,
                platforms[platform],
                t.suite,
                test_case,
                scenario,
                rep,
                scenarios[scenario],
                dict(t.params),
            )
        )
    return cells
