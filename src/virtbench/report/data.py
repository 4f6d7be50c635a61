"""Everything a report section may use, read once from the store (and only from the store).

Sections get a `ReportData`: the run row, host facts, settings, the run's description (units,
primary metrics, label roles, suite notes), cells, sample rows (with parsed labels, shared
between rows: read them, never change them in place; labels.py), the
analysed groups, comparisons with the baseline, both scores, and the
time series on demand. Helpers give stable platform colours and common selections.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import labelkeys
from ..analysis import groups as groups_mod
from ..analysis import scores
from ..analysis.floors import floor_function
from ..analysis.groups import Group, GroupKey
from ..analysis.normalize import Comparison, against_baseline, incomparable
from ..store.db import CellRow, Store
from ..store.description import RunDescription
from .labels import parse_labels
from .svg import PALETTE


@dataclass
class ReportData:
    store: Store
    run_id: str
    run: dict[str, Any]
    host: dict[str, Any]
    settings: dict[str, Any]
    description: RunDescription
    cells: list[CellRow]
    samples: list[dict[str, Any]]
    groups: list[Group]
    comparisons: Mapping[GroupKey, Comparison]  # each made when first asked for
    seed004: list[scores.Seed004Suite]
    geomeans: list[scores.GeoMean]
    platforms: list[str] = field(default_factory=list)  # baseline first, then campaign order
    suites: list[str] = field(default_factory=list)
    # groups with no ratio because the baseline measured them over another network path
    incomparable: dict[GroupKey, str] = field(default_factory=dict)

    @classmethod
    def load(cls, store: Store, run_id: str) -> ReportData:
        run = store.run(run_id)
        settings = json.loads(run.get("settings_json") or "{}")
        host = json.loads(run.get("host_json") or "{}")
        description = store.description(run_id)
        cells = store.cells(run_id)
        samples = store.sample_rows(run_id)
        parse_labels(samples)
        groups = groups_mod.build(samples, description)
        baseline = settings.get("baseline")
        comparisons = against_baseline(groups, baseline, floor_function(groups, baseline, host))
        platforms = list(dict.fromkeys(c.platform for c in cells))
        if baseline in platforms:
            platforms.remove(baseline)
            platforms.insert(0, baseline)
        return cls(
            store=store,
            run_id=run_id,
            run=run,
            host=host,
            settings=settings,
            description=description,
            cells=cells,
            samples=samples,
            groups=groups,
            comparisons=comparisons,
            seed004=[
                s for s in scores.seed004(groups, description.scoring_of) if seed004_applies(s)
            ],
            geomeans=scores.geomeans(groups, comparisons, baseline, description.scoring_of),
            platforms=platforms,
            suites=list(dict.fromkeys(c.suite for c in cells)),
            incomparable=incomparable(groups, baseline),
        )

    @property
    def baseline(self) -> str | None:
        return self.settings.get("baseline")

    def colour(self, platform: str) -> str:
        i = self.platforms.index(platform) if platform in self.platforms else len(self.platforms)
        return PALETTE[i % len(PALETTE)]

    @functools.cached_property
    def series(self) -> list[dict[str, Any]]:
        return self.store.series_rows(self.run_id)

    def select(
        self,
        suite: str | None = None,
        test_case: str | None = None,
        role: str | None = "target",
        primary: bool | None = None,
    ) -> list[Group]:
        return [
            g
            for g in self.groups
            if (suite is None or g.key.suite == suite)
            and (test_case is None or g.key.test_case == test_case)
            and (role is None or g.key.role == role)
            and (primary is None or g.primary == primary)
        ]

    def scenarios(self) -> list[str]:
        return list(dict.fromkeys(c.scenario for c in self.cells))

    def platform_labels(self) -> dict[str, dict[str, Any]]:
        """platform -> the labels its platform recorded (type, options, accel used...)."""
        out: dict[str, dict[str, Any]] = {}
        for c in self.cells:
            plat = c.labels.get(labelkeys.PLATFORM)
            if plat and c.platform not in out:
                out[c.platform] = plat
        for c in self.cells:  # platforms whose cells all failed still get their spec
            if c.platform not in out:
                out[c.platform] = json.loads(c.platform_json or "{}")
        return out


def seed004_applies(suite: scores.Seed004Suite) -> bool:
    """Seed 004's total (formula 2: the sum of each test's score, its mean over the best
    configuration's) says something only when configurations are compared: with one, every
    score is 1 and the total is the number of tests. One test with several configurations
    keeps its total, as seed 004's Table 7 (the application stack, one test) prints it."""
    return len(suite.configs) >= 2
