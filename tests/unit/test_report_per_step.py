"""The suite table leaves a sweep's per-step 1 s summaries out (the co-location section draws
them per step): listed, they were most of a co-location report's HTML."""

from __future__ import annotations

from virtbench.analysis.groups import Group, GroupKey
from virtbench.report.core import results


def _group(dims, labels):
    key = GroupKey("vm", "web", "httperf-sweep", "identical", "target", "cpu_util", dims)
    return Group(key, "%", False, False, labels=labels)


def test_only_per_step_summaries_are_left_out():
    summary = {"stat": "mean of 1 s samples"}
    assert results._per_step_summary(_group((("file_size_kb", 1), ("step", 3)), summary))
    # a per-size summary (wrk-max) and a step's own measurement stay listed
    assert not results._per_step_summary(_group((("file_size_kb", 1),), summary))
    assert not results._per_step_summary(_group((("file_size_kb", 1), ("step", 3)), {}))
