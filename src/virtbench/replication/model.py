"""A seed's findings as data: what the paper measured, how virtbench computes the same
quantity from a stored run's cells, and what counts as reproducing it.

Loaded from `replication/findings/seedNNN.toml` (facts only: figures, quantities, the paper's
numbers) and validated once, so a bad file names its key and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# what a finding's quantity is, computed from the run's groups (replication/compute.py)
RATIO = "ratio"  # x's mean / base's mean of one metric (per round, paired): raw, not oriented
AGGREGATE = "aggregate"  # like ratio, each side the per-round sum over its roles
MAX_RATIO = "max-ratio"  # a ratio of maxima: undecided when one unexplained stall drives it
SUITE_SCORE = "suite-score"  # the suite's score (geomean of oriented ratios) vs the baseline
QUANTITIES = (RATIO, AGGREGATE, MAX_RATIO, SUITE_SCORE)

HIGHER, LOWER, SAME = "higher", "lower", "same"  # what the paper saw, x against base
EXPECTS = (HIGHER, LOWER, SAME)

HW_ACCEL = "hw-accel"  # a VM of the finding ran with hardware assist (KVM), not TCG
HYPERVISOR = "hypervisor:"  # the host's hypervisor fact is this (a fleet host on ESXi ...)
# the cells applied the driver-domain weight of `weights:A:B:C` to back-end threads (a VM's
# QEMU); a container's network work is softirq work and cannot be weighted
HOST_WEIGHT = "host-weight"
REQUIREMENTS = (HW_ACCEL, HOST_WEIGHT, HYPERVISOR + "NAME")


@dataclass(frozen=True)
class Side:
    """One side of a quantity: the cells and roles it reads."""

    scenario: str
    platform: str | None = None  # None: the finding's platform
    roles: tuple[str, ...] = ("target",)
    dims: tuple[tuple[str, Any], ...] = ()  # extra label values, over the finding's


@dataclass(frozen=True)
class Finding:
    seed: str
    id: str
    figure: str  # the paper's figure or table
    what: str  # the quantity, in words
    quantity: str  # one of QUANTITIES
    expect: str  # one of EXPECTS
    paper: float  # the paper's value of the quantity (a ratio)
    paper_text: str  # the paper's numbers behind it, e.g. "999 / 1070 req/s"
    band: tuple[float, float]  # the ratio range that counts as the paper's size
    analogue: str  # the paper's mechanism -> what stands for it here
    test_cases: tuple[str, ...] = ()  # the first present in the run is used
    metric: str = ""  # "" = the test case's primary metric
    suite: str = ""  # suite-score only
    platforms: tuple[str, ...] = ()  # the first present in the run is used
    dims: tuple[tuple[str, Any], ...] = ()
    x: Side | None = None
    base: Side | None = None
    requires: tuple[str, ...] = ()
    note: str = ""  # a measured or stated mechanism difference, shown in the reason
    # the paper's size that was network bound on its link: (file size KB, link Gbit/s); the
    # reason then says what that size's solo moved here (is it still network bound?)
    link: tuple[float, float] | None = None


@dataclass(frozen=True)
class SeedFindings:
    seed: str
    paper: str
    campaigns: tuple[str, ...]  # campaigns that measure this seed (first: the full one)
    quick: str  # the campaign `virtbench replicate SEED --quick` runs
    full: str
    findings: tuple[Finding, ...] = field(default_factory=tuple)
