"""Metric and Sample: the currency every layer passes up (runner, scenarios, store).

Ground level: imports nothing of virtbench, so the store and analysis can use it without
reaching up into workloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import labelkeys


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    higher_is_better: bool
    primary: bool = False  # the headline metric of its test case (used in scores and charts)


@dataclass
class Sample:
    metric: str
    value: float
    unit: str
    higher_is_better: bool
    role: str = "target"
    labels: dict[str, Any] = field(default_factory=dict)


# The scenario of a cell that measured an environment's solo peak, the denominator of
# `load=PCT`: a reference measurement, shown in tables but never scored or compared as a
# scenario of its own.
SOLO_PEAK_SCENARIO = "solo-peak"
# the CPU limit a solo peak was measured under (two limits, two results): a run-wide dimension
PEAK_LIMIT_LABEL = labelkeys.PEAK_CPU_LIMIT


def is_solo_peak(scenario: str) -> bool:
    return scenario.split(" ", 1)[0] == SOLO_PEAK_SCENARIO


def shown_scenario(scenario: str, labels: dict[str, Any]) -> str:
    """The scenario as figures name it: a solo peak measured inside a shared CPU budget is
    "solo-peak (cpu quota Q P)", apart from the same platform's unlimited one."""
    limit = labels.get(PEAK_LIMIT_LABEL)
    if scenario == SOLO_PEAK_SCENARIO and limit and limit != "none":
        return f"{scenario} ({limit})"
    return scenario


# The label saying which network path a client-server sample's load generator took to its
# server (serving/netpath.py: loopback, host-bridge, bridge, remote). Analysis gives no ratio
# between samples taken over different paths: the ratio would measure the path.
NET_PATH_LABEL = labelkeys.NET_PATH
PATH_LABELS = (NET_PATH_LABEL,)
# a co-location environment offered this % of its own solo peak (`load=PCT`)
LOAD_PCT_LABEL = labelkeys.LOAD_PCT
# The labels of a per-environment summary sample (metrics/sampler.py `summary_samples`): its
# statistic and the spread of its 1 s readings. Facts of one sample, never a result's identity:
# a cell stores one summary per served point, whose spreads differ.
SUMMARY_LABELS = (labelkeys.STAT, labelkeys.STDEV, labelkeys.COV, labelkeys.N)
# what else used the machine while the cell ran (metrics/disturbance.py: outside CPU, steal,
# PSI, run queue), on every sample of the cell; and on a cell past the thresholds, what
# disturbed it ("outside CPU", "steal"). Facts of a cell, never a result's identity.
DISTURBANCE_LABEL = labelkeys.DISTURBANCE
DISTURBED_LABEL = labelkeys.DISTURBED
DISTURBANCE_LABELS = (DISTURBANCE_LABEL, DISTURBED_LABEL)
