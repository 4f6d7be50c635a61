"""A run's description (store/description.py), read from the workload registry.

The runner writes it when it creates a run, so analysis and report read what the samples
mean from the store and never import a workload.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..campaign.rounds import ORDER_LABELS
from ..results import DISTURBANCE_LABELS, PEAK_LIMIT_LABEL, SUMMARY_LABELS
from ..store.description import (
    MetricInfo,
    RunDescription,
    SuiteScoring,
    global_labels,
)
from ..workloads import registry

# Seed 004 scores seven suites (Table 2: cpu, multicore, memory, java, disk, network,
# application). Other suites get no seed 004 total.
SEED004_SUITES = frozenset({"cpu", "multicore", "memory", "java", "disk", "network", "application"})
# Suites whose figures are a cost of creating the isolation (start-up, boot, teardown), not a
# slowdown of the workload inside it: shown beside the workload geomean "all", never in it.
COST_SUITES = frozenset({"lifecycle"})
# Suites whose figures enter no score at all: maxima of rare events are not throughputs, so a
# geometric mean or seed 004 sum of them means nothing; users served before saturation is
# often only a lower bound (max_users came first), and its curves are the result.
UNSCORED_SUITES = frozenset({"latency", "conference"})


def scoring(suite: str) -> SuiteScoring:
    return SuiteScoring(
        workload=suite not in COST_SUITES,
        seed004=suite in SEED004_SUITES,
        scored=suite not in UNSCORED_SUITES,
    )


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
    suites = {w.suite for w in used}
    return RunDescription(
        metrics,
        labels,
        # every suite gets its row (and so its scoring flags), described or not
        {s: registry.SUITES.get(s, "") for s in sorted(suites)},
        {s: scoring(s) for s in sorted(suites)},
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
