"""Group a run's samples across repetitions and summarize each group.

A group is one (platform, suite, test case, scenario, role, metric) plus the sample labels
that distinguish results measured in the same cell (a memory block-size sweep, fio
buffered vs O_DIRECT, a web rate sweep). A label is a *dimension* if it is listed in
DIMENSION_LABELS or if it takes several values among one cell's samples of the same
role and metric; other labels (e.g. per-run facts) do not split groups.

Invalid samples (valid = 0) are kept in the group, counted and listed, but never enter the
statistics.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .stats import Summary, summarize

# Labels that always split groups even when one cell carries a single value of them.
DIMENSION_LABELS: set[str] = {
    "block_size_bytes",
    "direct",
    "file_size",
    "file_size_bytes",
    "rw",
    "iodepth",
    "rate",
    "connections",
    "protocol",
    "message_size_bytes",
}
# Labels that split groups of some test cases only: test case -> label keys.
TEST_DIMENSION_LABELS: dict[str, set[str]] = {}
# Labels that never split groups.
IGNORED_LABELS: set[str] = {"invalid"}


def add_dimension_labels(*keys: str, test_cases: tuple[str, ...] | None = None) -> None:
    """Let a suite declare labels that identify distinct results (call at import time).

    Prefer passing `test_cases`: a global key (e.g. "threads") otherwise also splits other
    suites' results whenever their values differ between platforms."""
    if test_cases is None:
        DIMENSION_LABELS.update(keys)
        return
    for tc in test_cases:
        TEST_DIMENSION_LABELS.setdefault(tc, set()).update(keys)


def _scalar(value: Any) -> Any:
    """A hashable, comparable stand-in for a label value."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _sort_key(value: Any) -> tuple[int, Any]:
    """Numbers before strings, numbers by value (so block sizes sort 4K < 64K < 1M)."""
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, int | float):
        return (0, value)
    return (1, str(value))


@dataclass(frozen=True)
class GroupKey:
    platform: str
    suite: str
    test_case: str
    scenario: str
    role: str
    metric: str
    dims: tuple[tuple[str, Any], ...] = ()

    @property
    def dims_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.dims)

    def dim(self, name: str) -> Any:
        return dict(self.dims).get(name)

    def on(self, platform: str) -> GroupKey:
        """The same result on another platform (for normalization)."""
        return GroupKey(
            platform, self.suite, self.test_case, self.scenario, self.role, self.metric, self.dims
        )

    @property
    def test(self) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
        """What identifies one test independent of where it ran: test case, metric, dims."""
        return (self.test_case, self.metric, self.dims)

    def sort_key(self) -> tuple:
        return (
            self.suite,
            self.test_case,
            self.metric,
            tuple((k, _sort_key(v)) for k, v in self.dims),
            self.scenario,
            self.role,
            self.platform,
        )


@dataclass(frozen=True)
class InvalidSample:
    repetition: int
    value: float
    reason: str
    cell_id: str


@dataclass
class Group:
    key: GroupKey
    unit: str
    higher_is_better: bool
    primary: bool  # the test case's headline metric (charts, scores)
    values: list[float] = field(default_factory=list)  # valid samples only
    repetitions: list[int] = field(default_factory=list)
    invalid: list[InvalidSample] = field(default_factory=list)
    summary: Summary = field(default_factory=lambda: Summary(0))

    @property
    def n_invalid(self) -> int:
        return len(self.invalid)


def _primary_metrics() -> dict[str, str]:
    """test case -> its primary metric, from the workload registry (code, not run data)."""
    try:
        from ..workloads import registry

        return {name: w.primary().name for name, w in registry.load_all().items()}
    except Exception:  # noqa: BLE001 - a broken plug-in workload must not break every report
        return {}


def _labels(row: dict[str, Any]) -> dict[str, Any]:
    labels = row.get("labels")
    if labels is None:
        labels = json.loads(row.get("labels_json") or "{}")
    return labels


def dimension_keys(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], set[str]]:
    """(test case, role, metric) -> the label keys that distinguish its results.

    A declared key whose value is the same in every sample of the test case splits nothing,
    so it is left out (keeps display names short: no "[threads=1]" on a 1-thread test)."""
    seen: dict[tuple[str, str, str, str], dict[str, set[Any]]] = {}
    overall: dict[tuple[str, str, str], dict[str, set[Any]]] = {}
    count: dict[tuple[str, str, str], int] = {}
    with_key: dict[tuple[str, str, str, str], int] = {}  # (test key..., label) -> rows having it
    for row in rows:
        labels = _labels(row)
        tkey = (row["test_case"], row["role"], row["metric"])
        count[tkey] = count.get(tkey, 0) + 1
        values = overall.setdefault(tkey, {})
        per_cell = seen.setdefault((row["cell_id"], *tkey), {})
        for k, v in labels.items():
            if k in IGNORED_LABELS:
                continue
            values.setdefault(k, set()).add(_scalar(v))
            with_key[(*tkey, k)] = with_key.get((*tkey, k), 0) + 1
            per_cell.setdefault(k, set()).add(_scalar(v))
    out: dict[tuple[str, str, str], set[str]] = {}
    for tkey, values in overall.items():
        declared = DIMENSION_LABELS | TEST_DIMENSION_LABELS.get(tkey[0], set())
        out[tkey] = {
            k
            for k, vs in values.items()
            # a constant key splits nothing, unless some samples lack it
            if k in declared and (len(vs) > 1 or with_key[(*tkey, k)] < count[tkey])
        }
    for (_cell, *tkey), values in seen.items():
        out[tuple(tkey)].update(k for k, vs in values.items() if len(vs) > 1)
    return out


def build(rows: list[dict[str, Any]], primary: dict[str, str] | None = None) -> list[Group]:
    """Rows of Store.sample_rows -> summarized groups, sorted for display."""
    primary = primary if primary is not None else _primary_metrics()
    dims_of = dimension_keys(rows)
    first_metric: dict[str, str] = {}
    groups: dict[GroupKey, Group] = {}
    for row in rows:
        labels = _labels(row)
        tkey = (row["test_case"], row["role"], row["metric"])
        dims = tuple(
            sorted(
                ((k, _scalar(labels.get(k))) for k in dims_of.get(tkey, ())),
                key=lambda kv: kv[0],
            )
        )
        key = GroupKey(
            row["platform"],
            row["suite"],
            row["test_case"],
            row["scenario"],
            row["role"],
            row["metric"],
            dims,
        )
        first_metric.setdefault(row["test_case"], row["metric"])
        g = groups.get(key)
        if g is None:
            head = primary.get(row["test_case"]) or first_metric[row["test_case"]]
            g = groups[key] = Group(
                key, row["unit"], bool(row["higher_is_better"]), row["metric"] == head
            )
        if row.get("valid", 1):
            g.values.append(float(row["value"]))
            g.repetitions.append(int(row["repetition"]))
        else:
            g.invalid.append(
                InvalidSample(
                    int(row["repetition"]),
                    float(row["value"]),
                    row.get("invalid_reason") or str(labels.get("invalid") or "invalid"),
                    row["cell_id"],
                )
            )
    for g in groups.values():
        g.summary = summarize(g.values)
    return sorted(groups.values(), key=lambda g: g.key.sort_key())
