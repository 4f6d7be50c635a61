"""The open-loop rate sweep's plan and verdicts, kept free of tools so it is unit-testable.

Rates rise in steps (absolute req/s, or fractions of a measured capacity as in seed 000's
10 % rounds); the sweep stops when throughput has stayed below its best for `fall_steps`
steps in a row, or when errors pass a threshold. The headline is the best throughput among
VALID steps and the offered rate where it was reached (seed 000 Fig. 5, seed 003 Fig. 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import VirtbenchError


@dataclass(frozen=True)
class Plan:
    start: float  # first offered rate, req/s
    step: float  # increment, req/s (> 0)
    max_steps: int
    max_rate: float | None = None  # no step above this rate

    def __post_init__(self) -> None:
        if self.step <= 0:
            raise VirtbenchError(
                f"web sweep: rate step must be > 0 req/s (got {self.step}); set rate_step"
                " (absolute mode) or step_fraction (capacity mode) to a positive value"
            )
        if self.start <= 0:
            raise VirtbenchError(f"web sweep: start rate must be > 0 req/s (got {self.start})")
        if self.max_steps < 1:
            raise VirtbenchError(f"web sweep: max_steps must be >= 1 (got {self.max_steps})")

    def rates(self) -> list[float]:
        out = []
        for i in range(self.max_steps):
            r = self.start + i * self.step
            if self.max_rate is not None and r > self.max_rate * (1 + 1e-9):
                break
            out.append(r)
        return out


def capacity_plan(
    capacity: float, start_fraction: float, step_fraction: float, max_fraction: float
) -> Plan:
    """Seed 000's plan: from `start_fraction` of capacity up in `step_fraction` steps."""
    if capacity <= 0:
        raise VirtbenchError("web sweep: the capacity probe measured 0 req/s; nothing to sweep")
    steps = (
        int(round((max_fraction - start_fraction) / step_fraction)) + 1 if step_fraction > 0 else 0
    )
    return Plan(
        start=capacity * start_fraction,
        step=capacity * step_fraction,
        max_steps=max(steps, 1),
        max_rate=capacity * max_fraction,
    )


@dataclass
class StepResult:
    index: int
    offered_rate: float
    throughput: float  # replies/s
    errors: int
    attempts: int
    invalid: str | None = None

    @property
    def error_share(self) -> float:
        return self.errors / self.attempts if self.attempts else 0.0


def stop_reason(steps: list[StepResult], fall_steps: int, error_threshold: float) -> str | None:
    """Why the sweep should stop after the last step, or None to go on."""
    if not steps:
        return None
    last = steps[-1]
    if last.error_share > error_threshold:
        return f"errors {last.error_share:.1%} of connections > {error_threshold:.1%}"
    best = 0.0
    below = 0
    for s in steps:
        if s.throughput > best:
            best, below = s.throughput, 0
        else:
            below += 1
    if below >= fall_steps:
        return f"throughput below its best ({best:.0f} req/s) for {below} steps"
    return None


def peak(steps: list[StepResult]) -> StepResult | None:
    """The step with the highest throughput among valid steps (None if none is valid)."""
    valid = [s for s in steps if not s.invalid]
    return max(valid, key=lambda s: s.throughput) if valid else None
