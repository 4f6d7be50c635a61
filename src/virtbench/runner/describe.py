"""A run's description (store/description.py), read from the workload registry and suites.py.

The runner writes it when it creates a run, so analysis and report read what the samples
mean from the store and never import a workload.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import suites
from ..analysis import platform_facts as stored
from ..campaign.rounds import ORDER_LABELS
from ..platforms import registry as platform_registry
from ..platforms.base import PlatformSpec
from ..platforms.capabilities import HostDevice, IsolationModes, RuntimeTools
from ..results import DISTURBANCE_LABELS, PEAK_LIMIT_LABEL, SUMMARY_LABELS
from ..store.description import (
    MetricInfo,
    RunDescription,
    SuiteScoring,
    global_labels,
)
from ..workloads import registry


def scoring(suite: str) -> SuiteScoring:
    facts = suites.get(suite)
    return SuiteScoring(workload=facts.workload, seed004=facts.seed004, scored=facts.scored)


def describe(test_cases: Iterable[str]) -> RunDescription:
    """The description of a run of these test cases."""
    workloads = registry.load_all()
    used = [workloads[tc] for tc in dict.fromkeys(test_cases) if tc in workloads]
    metrics = tuple(
        MetricInfo(w.suite, w.name, m.name, m.unit, m.higher_is_better, m.name == w.primary().name)
        for w in sorted(used, key=lambda w: w.name)
        for m in w.metrics
    )
    # Every declared label holds for every test case of the run, as it always did (the
    # report imported all workload modules). Scoping them per test case would regroup results,
    # e.g. sysbench-cpu-all's `threads`, which differs between platforms: a separate change.
    labels = global_labels(
        (*(k for w in workloads.values() for k in w.dimension_labels), PEAK_LIMIT_LABEL),
        # where a sample ran in its round (position, duet set and partner) never splits it
        (
            *(k for w in workloads.values() for k in w.ignored_labels),
            *SUMMARY_LABELS,
            *ORDER_LABELS,
            *DISTURBANCE_LABELS,  # a cell's disturbance never splits groups
        ),
    )
    used_suites = {w.suite for w in used}
    return RunDescription(
        metrics,
        labels,
        # every suite gets its row (and so its scoring flags), described or not
        {s: suites.get(s).description for s in sorted(used_suites)},
        {s: scoring(s) for s in sorted(used_suites)},
    )


def tools_used(test_cases: Iterable[str]) -> dict[str, list[str]]:
    """test case -> the tools it runs (in the environment and on the host), stored with the
    host facts so a comparison of two runs knows which tool versions matter."""
    workloads = registry.load_all()
    return {
        tc: sorted({*workloads[tc].tools, *workloads[tc].host_tools})
        for tc in dict.fromkeys(test_cases)
        if tc in workloads
    }


def platform_facts(specs: Iterable[PlatformSpec]) -> dict[str, Any]:
    """What analysis needs to know of each platform, asked of its type once at the run's
    start (platforms/capabilities.py RuntimeTools, HostDevice, IsolationModes) and stored with
    the host facts (analysis/platform_facts.py reads it), so analysis never asks a platform's
    type."""
    out: dict[str, dict[str, Any]] = {}

    def facts(spec: PlatformSpec) -> dict[str, Any]:
        cls = platform_registry.get(spec.type)
        tools = set(cls.runtime_tools(spec.options)) if issubclass(cls, RuntimeTools) else set()
        if spec.host is not None:  # it runs on its host's runtime too (QEMU of a VM)
            tools |= set(facts(spec.host)[stored.RUNTIME_TOOLS])
        device = issubclass(cls, HostDevice) and cls.host_device()
        modes = cls.mode_defaults() if issubclass(cls, IsolationModes) else None
        return {
            stored.RUNTIME_TOOLS: sorted(tools),
            stored.HOST_DEVICE: device,
            stored.MODES: modes,
        }

    for spec in specs:
        out.setdefault(spec.name, facts(spec))
    return {stored.PLATFORMS: out}
