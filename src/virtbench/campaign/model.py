"""A campaign: platforms x suites (test cases) x scenarios x repetitions, and its expanded cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..platforms.base import PlatformSpec

if TYPE_CHECKING:
    from ..scenarios.base import Scenario


@dataclass(frozen=True)
class Adaptive:
    """`repetitions = "auto"`: rounds are added until every group of a test case's primary
    metric has a 95% CI half-width within `precision_pct` % of its mean, or a cap is hit."""

    precision_pct: float = 1.0
    min_repetitions: int = 3  # the rounds always run (the plan's fixed part)
    max_repetitions: int = 30
    budget_s: float = 600.0  # measured cell time per test case, over all its platforms


WARMUP_SCOPES = ("scenario", "platform")
# [campaign] disturbed: what a cell past the disturbance thresholds becomes
DISTURBED_EXCLUDE, DISTURBED_KEEP = "exclude", "keep"
DISTURBED_POLICIES = (DISTURBED_EXCLUDE, DISTURBED_KEEP)
ADAPTIVE_KEYS = ("precision_pct", "min_repetitions", "max_repetitions", "budget_s")
CLIENT_KEYS = ("client_host", "client_inventory", "client_target_address")


@dataclass
class Settings:
    repetitions: int = 3  # adaptive: the first rounds (min_repetitions)
    warmup: int = 1  # uncounted runs per (platform, test case, scenario) before measuring
    # "platform": per (platform, test case) instead, once after each provisioning: what a warm-up
    # warms (a TCG guest's translated code, the page cache) outlives the scenario
    warmup_scope: str = "scenario"
    order: str = "sequential"  # or "random": shuffled within each platform, seed recorded
    seed: int | None = None
    cell_timeout: float = 600.0
    baseline: str | None = None  # platform name the others are normalized against
    target_cpus: list[int] | None = None  # host CPUs the target is pinned to
    # order = "duet": the two disjoint host CPU sets the pair's cells run on, swapped every
    # round (campaign/duet.py: the halves of the usable CPUs unless the campaign names them)
    duet_cpus: list[list[int]] | None = None
    client_cpus: list[int] | None = None  # host CPUs for load generators
    adaptive: Adaptive | None = None  # repetitions = "auto"
    # load generators on another host (serving/remote.py): its inventory name, the inventory
    # (default: $VIRTBENCH_INVENTORY), the address it reaches this host at (default: ours on
    # the route to it); client_cpus then name that host's CPUs
    client_host: str | None = None
    client_inventory: str | None = None
    client_target_address: str | None = None
    # co-located environments share the target's CPU quota ("shared", cgroups/budget.py) or
    # keep each its own ("own"); docs/colocation.md "One CPU budget per cell"
    cpu_budget: str = "shared"
    # measure the baseline twice, as platform "<baseline>-aa" in the same rounds: each test
    # case's noise floor on this host (analysis/floors.py)
    aa: bool = False
    # `run --platforms/--suites/--test-cases` (campaign/select.py): stored with the run, so a
    # --resume runs the same part of the matrix; None: the whole campaign
    selection: dict[str, list[str]] | None = None
    # a cell past the disturbance thresholds (metrics/disturbance.py): "exclude" (its samples
    # invalid: out of statistics, kept and shown) or "keep" (labelled `disturbed` only)
    disturbed: str = DISTURBED_EXCLUDE


@dataclass
class TestSelection:
    suite: str
    test_case: str
    params: dict[str, Any]


@dataclass
class Campaign:
    name: str
    file: str
    text: str
    description: str
    settings: Settings
    platforms: list[PlatformSpec]
    tests: list[TestSelection]
    scenarios: list[Scenario]  # parsed once; each keeps its text (Scenario.text())
    # platform name -> the only suites it runs (a platform's `suites` key; absent: all), as
    # seed 004's Table 2 measures each configuration with a selection of the suites
    platform_suites: dict[str, frozenset[str]] = field(default_factory=dict)

    def runs(self, platform: str, suite: str) -> bool:
        only = self.platform_suites.get(platform)
        return only is None or suite in only


@dataclass(frozen=True)
class DuetSlot:
    """Where one cell of a duet pair runs: its CPU set (index into `duet_cpus`, and the
    CPUs) and the platform measured beside it at the same time."""

    cpu_set: int
    cpus: tuple[int, ...]
    partner: str


@dataclass
class Cell:
    seq: int
    platform: PlatformSpec
    suite: str
    test_case: str
    scenario: str  # as written in the campaign: what the store and messages show
    repetition: int
    parsed_scenario: Scenario  # what the runner runs (shared by every cell of the scenario)
    params: dict[str, Any] = field(default_factory=dict)
    # 1 = first platform of its repetition round (interleaved rounds); None: not in a round
    round_position: int | None = None
    duet: DuetSlot | None = None  # order = "duet": its CPU set and partner

    def key(self) -> tuple[str, str, str, int]:
        return (self.platform.name, self.test_case, self.scenario, self.repetition)
