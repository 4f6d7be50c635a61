"""`virtbench run --platforms/--suites/--test-cases`: a part of a campaign's matrix.

The selection is applied to the loaded campaign, so every later step (cells, description,
adaptive plan, report) sees only the chosen part; it is stored with the run's settings and
applied again on `--resume`. Platforms left out stay declared (with no suites), because a
chosen one may run inside them (`host`) or use them as neighbours.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..errors import VirtbenchError
from .model import Campaign

KEYS = ("platforms", "suites", "test_cases")  # as stored in the run's settings


class SelectionError(VirtbenchError):
    """A name the campaign does not have; the message lists the ones it has."""


def split(text: str | None) -> list[str] | None:
    """ "a,b" -> ["a", "b"]; None or "" -> None (everything)."""
    if not text:
        return None
    return [name.strip() for name in text.split(",") if name.strip()] or None


def _check(option: str, asked: Sequence[str], known: Sequence[str], campaign: Campaign) -> None:
    unknown = [n for n in asked if n not in known]
    if unknown:
        raise SelectionError(
            f"{option}: {', '.join(unknown)} not in campaign '{campaign.name}'"
            f" ({campaign.file}); it has: {', '.join(known)}"
        )


def apply(campaign: Campaign, selection: dict[str, list[str] | None] | None) -> Campaign:
    """The campaign reduced to `selection` ({"platforms": [...], "suites": [...],
    "test_cases": [...]}, None or absent = all). Unknown names are refused, naming the
    campaign's; a selection that leaves no cell is refused too."""
    if not selection or not any(selection.get(k) for k in KEYS):
        return campaign
    platforms = selection.get("platforms")
    suites = selection.get("suites")
    test_cases = selection.get("test_cases")
    names = [p.name for p in campaign.platforms]
    # platforms that measure (suites = [] ones only host or neighbour others)
    measuring = [n for n in names if campaign.platform_suites.get(n) != frozenset()]
    if platforms:
        _check("--platforms", platforms, measuring, campaign)
    if suites:
        _check("--suites", suites, list(dict.fromkeys(t.suite for t in campaign.tests)), campaign)
    if test_cases:
        _check("--test-cases", test_cases, [t.test_case for t in campaign.tests], campaign)
    tests = [
        t
        for t in campaign.tests
        if (not suites or t.suite in suites) and (not test_cases or t.test_case in test_cases)
    ]
    if not tests:
        raise SelectionError(
            f"--suites {','.join(suites or [])} and --test-cases {','.join(test_cases or [])}"
            f" leave no test case of campaign '{campaign.name}'"
        )
    platform_suites = dict(campaign.platform_suites)
    if platforms:
        for name in names:
            if name not in platforms:
                platform_suites[name] = frozenset()  # declared, measures nothing
    settings = campaign.settings
    baseline = settings.baseline
    if platforms and baseline not in platforms:
        baseline = next(n for n in names if n in platforms)  # the first chosen, in file order
    settings = dataclasses.replace(
        settings,
        baseline=baseline,
        selection={k: selection.get(k) for k in KEYS if selection.get(k)},
    )
    chosen = dataclasses.replace(
        campaign, tests=tests, platform_suites=platform_suites, settings=settings
    )
    if not any(chosen.runs(p, t.suite) for p in names for t in tests):
        raise SelectionError(
            f"the selection leaves no cell of campaign '{campaign.name}': the chosen platforms"
            " run none of the chosen suites (their `suites` key)"
        )
    return chosen
