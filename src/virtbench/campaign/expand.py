"""Expand a campaign into its matrix of cells, in the order they will run."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..platforms.base import PlatformSpec
from . import rounds
from .model import Campaign, Cell, TestSelection

if TYPE_CHECKING:
    from ..scenarios.base import Scenario

ORDERS = ("sequential", "random", "interleaved", rounds.DUET)


def uses_seed(order: str, adaptive: bool) -> bool:
    """Whether a run in this order draws from its seed: the runner then picks one when the
    campaign gives none and stores it, so the run can be reproduced and resumed. Adaptive
    extra rounds are randomized interleaved rounds whatever the order."""
    return order != "sequential" or adaptive


def expand(
    campaign: Campaign, repetitions: int | None = None, seed: int | None = None
) -> list[Cell]:
    """The cells in run order. The runner provisions a platform for each run of consecutive
    cells on it.

    - sequential: platform by platform, each provisioned once, in the file's order;
    - random: as sequential, shuffled within each platform by `seed` (reproducible);
    - interleaved: repetition rounds, each visiting every platform in turn (each platform is
      provisioned once per round), so drift in host load over the run hits every platform
      alike instead of masquerading as a platform difference; the platforms' order changes
      from round to round (campaign/rounds.py), so no platform always runs first;
    - duet: rounds of pairs, the two platforms of each pair measured at the same time on
      disjoint CPU sets (campaign/rounds.py, runner/duet.py).
    """
    reps = repetitions or campaign.settings.repetitions
    rng = random.Random(seed)
    order = campaign.settings.order
    blocks: list[tuple[PlatformSpec, list[tuple[TestSelection, Scenario, int]]]] = []
    if order == rounds.DUET:
        return rounds.duet_cells(campaign, range(1, reps + 1), 0)
    if order == "interleaved":
        for rep in range(1, reps + 1):
            blocks += _round(campaign, {t.test_case: rep for t in campaign.tests}, seed)
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


def _round(campaign: Campaign, reps: dict[str, int], seed: int | None) -> list[Block]:
    """One repetition round of the test cases in `reps` (test case -> its repetition
    number), visiting every platform in turn, in the round's order (rounds.platform_order:
    the file's order permuted by the seed and the round)."""
    tests = [t for t in campaign.tests if t.test_case in reps]
    rep = max(reps.values(), default=0)
    # only the platforms measured in this round take a position (not a VM that only hosts
    # a stacked container): the balance is over them
    visiting = [p for p in campaign.platforms if any(campaign.runs(p.name, t.suite) for t in tests)]
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
        for spec in rounds.platform_order(visiting, seed, rep)
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
    return rounds.label_positions(cells)


def extra_round(
    campaign: Campaign, reps: dict[str, int], first_seq: int, seed: int | None
) -> list[Cell]:
    """An adaptive run's next round, numbered from `first_seq`: interleaved whatever the
    campaign's order (every platform in turn, so drift hits them alike, in the round's
    randomized platform order), shuffled within each platform for order = "random" (by
    `seed` and the round, reproducible); pairs of simultaneous cells for order = "duet"."""
    if campaign.settings.order == rounds.DUET:
        return rounds.duet_cells(campaign, reps, first_seq)
    blocks = _round(campaign, reps, seed)
    if campaign.settings.order == "random":
        rng = random.Random(f"{seed}/{max(reps.values(), default=0)}")
        for _spec, block in blocks:
            rng.shuffle(block)
    return _cells(blocks, first_seq)


def rebuild(campaign: Campaign, stored: list[tuple[int, str, str, str, int]]) -> list[Cell]:
    """The cells of stored rows (seq, platform, test case, scenario, repetition), for a
    resume of a run whose cells the campaign alone does not give (adaptive rounds). Round
    positions and duet slots are read back from the stored order, which holds them."""
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
    if campaign.settings.order == rounds.DUET:
        return rounds.duet_slots(campaign, cells)
    return rounds.label_positions(cells)
