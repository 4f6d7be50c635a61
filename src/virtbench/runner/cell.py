"""One cell's measurement: its one sampler (watching role "target"), its series, and its
outcome with a failure classified instead of raised."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .. import labelkeys
from ..campaign.model import DISTURBED_KEEP
from ..errors import VirtbenchError, WorkloadError, WorkloadTimeout
from ..metrics import disturbance
from ..metrics.sampler import Sampler
from ..platforms.base import Platform, PlatformSpec
from ..results import Sample
from ..workloads.base import RunContext

# what the store keeps of a series point: (role, metric, t, value, unit)
Point = tuple[str, str, float, float, str]


@dataclass
class Outcome:
    status: str  # "ok", "failed" or "timeout"
    samples: list[Sample]
    series: list[Point]
    error: str | None
    elapsed_s: float
    # what else used the machine meanwhile (metrics.disturbance), on every sample as a label
    disturbance: dict[str, Any] | None = None


def cell_id(run_id: str, seq: int) -> str:
    return f"{run_id}/{seq:04d}"


def spec_json(spec: PlatformSpec) -> str:
    return json.dumps(
        {
            "name": spec.name,
            "type": spec.type,
            "options": spec.options,
            "host": spec.host.name if spec.host else None,
        }
    )


def measure(
    target: Platform, ctx: RunContext, body: Callable[[RunContext, Sampler], list[Sample]]
) -> Outcome:
    """Run `body` with the cell's sampler running; its series and the workload's go to the
    outcome. Ctrl-C and SIGTERM are not caught."""
    series: list[Point] = []

    def record(metric: str, t: float, value: float, unit: str, role: str = "target") -> None:
        series.append((role, metric, t, value, unit))

    sampler = Sampler(record)
    sampler.add("target", target)
    # virtbench's own processes are whatever the sampler watches (every environment of the
    # cell, added as they come), the runner's tree and our dockerd: the rest is outside
    monitor = disturbance.Monitor(
        lambda: disturbance.own_of(sampler.accountings(), disturbance.own_daemons())
    )
    try:
        with monitor, sampler:
            samples = body(replace(ctx, series=record, t0=sampler.t0), sampler)
        status, error = "ok", None
    except WorkloadError as exc:
        samples, error = list(getattr(exc, "samples", [])), str(exc)  # partial results kept
        status = "timeout" if timed_out(exc) else "failed"
        flag_unfinished(samples, status, error)
    except VirtbenchError as exc:
        samples, status, error = [], "failed", str(exc)
    except Exception as exc:  # a bug must fail the cell, not lose the run
        samples, status = [], "failed"
        error = f"internal error: {exc!r}\n{traceback.format_exc(limit=5)}"
    reading = monitor.reading()
    label = reading.label() if reading is not None else None
    if label is not None:
        for s in samples:
            s.labels[labelkeys.DISTURBANCE] = label
    return Outcome(status, samples, series, error, time.monotonic() - sampler.t0, label)


def flag_disturbed(samples: list[Sample], label: dict[str, Any] | None, policy: str) -> str | None:
    """Mark a cell's samples past the thresholds (metrics.disturbance.judge): the short kind in
    `disturbed`, and unless `policy` is "keep", invalid with the figures (so out of every
    statistic, kept and shown). A sample with its own invalid reason keeps it. The reason."""
    why = disturbance.judge(label) if label is not None else None
    if why is None or label is None:
        return None
    kind = disturbance.what(label)
    for s in samples:
        s.labels[labelkeys.DISTURBED] = kind
        if policy != DISTURBED_KEEP and not s.labels.get(labelkeys.INVALID):
            s.labels[labelkeys.INVALID] = f"disturbed: {why}"
    return why


def flag_unfinished(samples: list[Sample], status: str, error: str) -> None:
    """What a cell measured before it failed or timed out is kept (nothing measured is lost)
    but flagged invalid: the cell did not finish, so its statistics leave it out and the
    report lists it with this reason. A sample that has its own reason keeps it; one of a
    scene that finished before a later scene failed (labelkeys.LATER_SCENE_FAILED) stays valid."""
    lines = error.strip().splitlines()
    what = "timed out" if status == "timeout" else "failed"
    reason = f"cell {what}: {lines[0][:200] if lines else 'no error text'}"
    for s in samples:
        if not s.labels.get(labelkeys.INVALID) and labelkeys.LATER_SCENE_FAILED not in s.labels:
            s.labels[labelkeys.INVALID] = reason


def timed_out(exc: BaseException) -> bool:
    """True if virtbench's time limit killed a command (WorkloadTimeout), also when a workload
    re-raised it with more words (`raise WorkloadError(...) from exc`); never from the text."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, WorkloadTimeout):
            return True
        seen = seen.__cause__
    return False
