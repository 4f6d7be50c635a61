"""The order inside repetition rounds: which platform goes first, and duet pairs.

Rounds are the unit of noise: a burst on the host hits the cells of one round. Two biases
remain inside a round, and this module removes them:

- position: the platform measured first in a round meets another host state (caches, page
  cache, frequency, the previous platform's leftovers) than the one measured second. A fixed
  order turns that into a platform difference (measured: docs/code-measurements.md).
  Interleaved rounds therefore permute the platforms
  from round to round, by the run's seed (randomized multiple interleaved trials, Abedi and
  Brecht 2017), balanced: within each block of n rounds (n platforms) every platform takes
  every position exactly once, so a short run is as balanced as a long one.
- time: even a balanced sequence measures A and B at different moments. `order = "duet"`
  (Bulej et al. 2020) measures both at the same time on disjoint CPU sets and swaps the sets
  every round, so a burst hits both and a CPU set's own bias cancels over rounds.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from .. import labelkeys
from .model import Campaign, Cell, DuetSlot

DUET = "duet"
# sample labels the run order adds (runner/run.py, runner/duet.py); declared ignored
# (runner/describe.py): they say where a sample was measured and never split its group
ROUND_POSITION_LABEL = labelkeys.ROUND_POSITION
DUET_LABEL = labelkeys.DUET
ORDER_LABELS = (ROUND_POSITION_LABEL, DUET_LABEL)

T = TypeVar("T")


def platform_order(platforms: Sequence[T], seed: int | None, rep: int) -> list[T]:
    """The platforms in the order round `rep` (1, 2, ...) visits them.

    A rotation of a seeded random permutation: in each block of len(platforms) rounds every
    platform is in every position once, and which rotation a round gets is shuffled too, so
    the sequence is unpredictable but balanced. A pure function of (seed, round): extra
    adaptive rounds and a resume get the same order. `seed` None (runs stored before rounds
    were randomized, which recorded none) keeps the file's order, so they still resume."""
    n = len(platforms)
    if seed is None or n < 2 or rep < 1:
        return list(platforms)
    block, i = divmod(rep - 1, n)
    rng = random.Random(f"rounds/{seed}/{block}")
    perm = list(platforms)
    rng.shuffle(perm)
    shifts = list(range(n))
    rng.shuffle(shifts)
    k = shifts[i]
    return perm[k:] + perm[:k]


def label_positions(cells: list[Cell]) -> list[Cell]:
    """Each cell's position in its round (1 = its platform went first), for the repetitions
    whose cells are one contiguous run: those are rounds (interleaved, adaptive extra rounds).
    Sequential repetitions of a platform are no round and get no position."""
    spans: dict[int, list[int]] = {}
    for i, c in enumerate(cells):
        spans.setdefault(c.repetition, []).append(i)
    for idx in spans.values():
        if idx[-1] - idx[0] + 1 != len(idx):
            continue  # not contiguous: not a round
        rank: dict[str, int] = {}
        for i in idx:
            rank.setdefault(cells[i].platform.name, len(rank) + 1)
        if len(rank) < 2:
            continue  # one platform: a position says nothing
        for i in idx:
            cells[i].round_position = rank[cells[i].platform.name]
    return cells


def pair(campaign: Campaign) -> tuple[str, str]:
    """The duet's two platforms: the baseline A and the one other measured platform B
    (campaign/duet.py has refused any other shape)."""
    a = campaign.settings.baseline
    measured = [p.name for p in campaign.platforms if _measures(campaign, p.name)]
    others = [n for n in measured if n != a]
    assert a is not None and len(others) == 1, "duet campaign not checked by campaign/duet.py"
    return a, others[0]


def slot(campaign: Campaign, platform: str, rep: int) -> DuetSlot:
    """Where `platform`'s cell of round `rep` runs: A on set 0 in odd rounds, set 1 in even
    ones, B on the other, so each platform spends as many rounds on each set."""
    a, b = pair(campaign)
    sets = campaign.settings.duet_cpus
    assert sets is not None and len(sets) == 2
    index = (rep - 1) % 2 if platform == a else rep % 2
    return DuetSlot(index, tuple(sets[index]), b if platform == a else a)


def duet_cells(
    campaign: Campaign, reps: Iterable[int] | dict[str, int], first_seq: int
) -> list[Cell]:
    """Duet rounds: for each round (a repetition number, or one round given as test case ->
    repetition), each test case and scenario, the pair's two cells, A then B, numbered
    consecutively from `first_seq`. The runner starts the two cells of a pair together."""
    rounds = (
        [reps]
        if isinstance(reps, dict)
        else [{t.test_case: r for t in campaign.tests} for r in reps]
    )
    specs = {p.name: p for p in campaign.platforms}
    a, b = pair(campaign)
    cells: list[Cell] = []
    for by_test in rounds:
        for t in campaign.tests:
            if t.test_case not in by_test:
                continue
            rep = by_test[t.test_case]
            for s in campaign.scenarios:
                for name in (a, b):
                    cells.append(
                        Cell(
                            first_seq + len(cells),
                            specs[name],
                            t.suite,
                            t.test_case,
                            s.text(),
                            rep,
                            s,
                            dict(t.params),
                            duet=slot(campaign, name, rep),
                        )
                    )
    return cells


def duet_slots(campaign: Campaign, cells: list[Cell]) -> list[Cell]:
    """Stored duet cells (a resume) given back their slots: a function of platform and round."""
    return [replace(c, duet=slot(campaign, c.platform.name, c.repetition)) for c in cells]


def duet_pairs(cells: list[Cell]) -> list[list[Cell]]:
    """Consecutive cells of one round, test case and scenario: the cells run together."""
    out: list[list[Cell]] = []
    for c in cells:
        last = out[-1][-1] if out else None
        if last is not None and (last.repetition, last.test_case, last.scenario) == (
            c.repetition,
            c.test_case,
            c.scenario,
        ):
            out[-1].append(c)
        else:
            out.append([c])
    return out


def _measures(campaign: Campaign, platform: str) -> bool:
    return any(campaign.runs(platform, t.suite) for t in campaign.tests)
