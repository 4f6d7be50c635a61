"""sysbench: `cpu` (prime search events/s) and `memory` (MiB/s moving blocks of one size),
read from its plain-text report."""

from __future__ import annotations

import re

from ..errors import WorkloadError

_EPS = re.compile(r"events per second:\s*([\d.]+)")
_RATE = re.compile(r"([\d.]+) MiB transferred \(\s*([\d.]+) MiB/sec\)")
_TIME = re.compile(r"total time:\s+([\d.]+)s")
_EVENTS = re.compile(r"total number of events:\s+(\d+)")


def cpu_argv(threads: int, duration: int, max_prime: int) -> list[str]:
    return [
        "sysbench",
        "cpu",
        f"--threads={threads}",
        f"--time={duration}",
        f"--cpu-max-prime={max_prime}",
        "run",
    ]


def cpu_events_argv(threads: int, events: int, max_prime: int) -> list[str]:
    """A fixed amount of work (`events` prime searches) shared by `threads`: time it."""
    return [
        "sysbench",
        "cpu",
        f"--threads={threads}",
        f"--events={events}",
        "--time=0",  # no time limit: the run ends when the events are done
        f"--cpu-max-prime={max_prime}",
        "run",
    ]


def parse_total_time(text: str, what: str) -> tuple[float, int]:
    """(total time in s, events done) of a `sysbench ... run` report."""
    total, events = _TIME.search(text), _EVENTS.search(text)
    if not (total and events):
        raise WorkloadError(f"{what}: no 'total time' or 'total number of events' in sysbench")
    return float(total.group(1)), int(events.group(1))


def parse_cpu(text: str, what: str) -> float:
    """events per second of `sysbench cpu run`."""
    m = _EPS.search(text)
    if not m:
        raise WorkloadError(f"{what}: no 'events per second' in sysbench output")
    return float(m.group(1))


def memory_argv(threads: int, block_kib: int, op: str, access: str, seconds: int) -> list[str]:
    return [
        "sysbench",
        "memory",
        f"--threads={threads}",
        f"--memory-block-size={block_kib}K",
        # time-bound, not size-bound: every point runs `seconds`
        "--memory-total-size=100T",
        f"--memory-oper={op}",
        f"--memory-access-mode={access}",
        f"--time={seconds}",
        "run",
    ]


def parse_memory(text: str, what: str) -> dict[str, float]:
    """{"mib": MiB moved, "mib_s": MiB/s, "time_s": seconds, "events": blocks moved}."""
    rate = _RATE.search(text)
    total = _TIME.search(text)
    events = _EVENTS.search(text)
    if not (rate and total and events):
        raise WorkloadError(f"{what}: no 'MiB transferred (... MiB/sec)' in sysbench output")
    return {
        "mib": float(rate.group(1)),
        "mib_s": float(rate.group(2)),
        "time_s": float(total.group(1)),
        "events": float(events.group(1)),
    }


def too_few_blocks(parsed: dict[str, float]) -> str | None:
    """Why a memory point is no measurement: too few blocks moved to time (huge blocks on a
    slow platform); None when it is one."""
    if parsed["events"] < 10:
        return f"only {parsed['events']:.0f} blocks moved: raise point_time"
    return None
