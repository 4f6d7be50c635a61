"""Expand a campaign into its matrix of cells, in the order they will run."""

from __future__ import annotations

import random

from .model import Campaign, Cell


def expand(
    campaign: Campaign, repetitions: int | None = None, seed: int | None = None
) -> list[Cell]:
    """Cells grouped by platform (each platform is provisioned once); within a platform, either
    the file's order or a shuffle driven by `seed` so the order can be reproduced."""
    reps = repetitions or campaign.settings.repetitions
    rng = random.Random(seed)
    cells: list[Cell] = []
    for spec in campaign.platforms:
        group = [
            (t, scenario, rep)
            for t in campaign.tests
            for scenario in campaign.scenarios
            for rep in range(1, reps + 1)
        ]
        if campaign.settings.order == "random":
            rng.shuffle(group)
        for t, scenario, rep in group:
            cells.append(
                Cell(len(cells), spec, t.suite, t.test_case, scenario, rep, dict(t.params))
            )
    return cells
