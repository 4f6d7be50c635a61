"""What virtbench declared at store schema v1, frozen as data in v1_description.json
(generated once from commit 448f461: the workload registry, analysis.groups' label sets after
every workload module and report plug-in was imported, and the suite notes). The v1 -> v2
migration describes with it every run stored before runs described themselves, so they group
and read as they did.

Never edit or regenerate the file: it is what the old code did, not what today's declares.
v1 applied every declared label to every test case (the report imported all workloads).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .description import MetricInfo, RunDescription, global_labels

DATA = Path(__file__).with_suffix(".json")


@functools.cache
def _frozen() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def describe(test_cases: Iterable[str]) -> RunDescription:
    """The description v1 code implied for a run of these test cases."""
    v1 = _frozen()
    known = sorted(tc for tc in set(test_cases) if tc in v1["metrics"])
    metrics = tuple(
        MetricInfo(v1["metrics"][tc]["suite"], tc, *m)
        for tc in known
        for m in v1["metrics"][tc]["metrics"]
    )
    suites = {v1["metrics"][tc]["suite"] for tc in known}
    return RunDescription(
        metrics,
        global_labels(v1["dimension_labels"], v1["ignored_labels"]),
        {s: text for s, text in v1["suites"].items() if s in suites},
    )
