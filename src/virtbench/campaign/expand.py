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
            for spec in campaign.platforms:
                block = [(t, s, rep) for t in campaign.tests for s in campaign.scenarios]
                blocks.append((spec, block))
    else:
        for spec in campaign.platforms:
            block = [
                (t, s, rep)
                for t in campaign.tests
                for s in campaign.scenarios
                for rep in range(1, reps + 1)
            ]
            if order == "random":
                rng.shuffle(block)
            blocks.append((spec, block))
    cells: list[Cell] = []
    for spec, block in blocks:
        for t, scenario, rep in block:
            cells.append(
                Cell(
                    len(cells),
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
