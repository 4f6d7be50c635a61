"""What a workload offers the co-location scenarios beyond the `Workload` contract.

Protocols, as platforms/capabilities.py has them: a scenario asks `isinstance(cls, ...)` of a
workload class (or instance) and never reads co-location's parameters off a workload that
does not offer them. A workload offers one by declaring its members; nothing to inherit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..drivers.sweep import LockstepParty
    from ..platforms.base import Platform
    from ..results import Sample
    from .base import RunContext


@runtime_checkable
class OfferedRate(Protocol):
    """It offers a rate per second that a parameter sets: co-location's `load=PCT` sets it to
    a share of the environment's solo peak (scenarios/rates.py)."""

    rate_param: ClassVar[str]


@runtime_checkable
class ServedSizes(Protocol):
    """It serves file sizes a parameter sets: `different:SIZE` sets a neighbour's."""

    size_param: ClassVar[str]


@runtime_checkable
class RateSchedule(Protocol):
    """Co-located environments can sweep one schedule of rates (per served size) together,
    each its own solo peak's shares: the pair scenarios set it through this parameter."""

    schedule_param: ClassVar[str]


@runtime_checkable
class SoloPeakRetry(Protocol):
    """Its solo-peak run can end without reaching saturation (a rate sweep whose top step was
    served in full), which is no peak: `unsaturated` says so on the headline samples and
    returns the highest rate offered; the retry offers at least twice that through
    `top_rate_param` (scenarios/peaks.py)."""

    top_rate_param: ClassVar[str]

    @classmethod
    def unsaturated(cls, samples: list[Sample], label: str = "invalid") -> float | None: ...


@runtime_checkable
class StepsTogether(Protocol):
    """It measures in steps (a sweep's rates, one run per file size) that co-located
    environments start and end together: `run_together` is `run` with the cell's lockstep
    `party` calling begin()/end() around each step (drivers/sweep.py)."""

    def run_together(
        self, platform: Platform, ctx: RunContext, party: LockstepParty
    ) -> list[Sample]: ...
