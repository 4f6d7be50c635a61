"""Group a run's samples across repetitions and summarize each group.

A group is one (platform, suite, test case, scenario, role, metric) plus the sample labels
that distinguish results measured in the same cell (a memory block-size sweep, fio
buffered vs O_DIRECT, a web rate sweep). A label is a *dimension* if the run's description
(stored with the run) declares it one, or if it takes several values among one cell's samples
of the same role and metric; ignored labels (per-run facts) never split groups.

Invalid samples (valid = 0) are kept in the group, counted and listed, but never enter the
statistics.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import labelkeys
from ..store.description import DIMENSION, IGNORED, RunDescription
from .colocation import BESIDE_LABEL, beside_targets
from .stalls import sample_stall
from .stats import Summary, summarize

# the reason of an invalid sample (the store's valid flag), never a result's identity


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
    labels: dict[str, Any] = field(default_factory=dict)  # the same in all its samples
    declared: frozenset[str] = frozenset()  # the run's declared dimension labels of its test
    # valid samples whose value is a stall the latency probe could not explain (analysis/stalls)
    stalls: list[tuple[int, float]] = field(default_factory=list)  # (repetition, stall µs)

    @property
    def identity(self) -> tuple[tuple[str, Any], ...]:
        """Its dims and the declared dimensions constant over its run (left out of dims, which
        only tell results of one run apart): what makes results of two runs the same test."""
        dims = dict(self.key.dims)
        for k in self.declared - dims.keys():
            if self.labels.get(k) is not None:
                dims[k] = _scalar(self.labels[k])
        return tuple(sorted(dims.items()))

    def _meet(self, labels: dict[str, Any]) -> None:
        """Keep the labels this sample shares with the group's earlier ones. The first
        sample's dict itself is kept until one differs (read-only, like the rows' labels):
        a copy per group cost a co-location run's report much memory
        (docs/code-measurements.md)."""
        if not self.values and not self.invalid:
            self.labels = labels
            return
        kept = {k: v for k, v in self.labels.items() if k in labels and _same(labels[k], v)}
        if len(kept) < len(self.labels):
            self.labels = kept

    @property
    def n_invalid(self) -> int:
        return len(self.invalid)


def _same(a: Any, b: Any) -> bool:
    if a is b and type(a) is not float:  # one value shared by rows (report/labels.py) is
        return True  # itself, unencoded; a float may be a NaN, unequal to itself
    return _scalar(a) == _scalar(b) and type(a) is type(b)


def _labels(row: dict[str, Any]) -> dict[str, Any]:
    labels = row.get("labels")
    if labels is None:
        labels = json.loads(row.get("labels_json") or "{}")
    return labels


class _SplitPairs:
    """A sample's labels that may split its results, as (key, scalar value) pairs. Each dict
    or list value is JSON-encoded to be compared (env_params, solo peaks...), so work done
    for one value is kept for rows sharing it (report/labels.py shares equal ones): the
    last labels' pairs, for the next row (a sweep step's dozen metrics are stored one after
    another with one labels dict), and the encodings of recent values by identity."""

    MEMO = 4096  # encodings kept: a cell's shared values, bounded where nothing is shared

    def __init__(self, description: RunDescription) -> None:
        self.description = description
        self.ignored: dict[str, frozenset[str]] = {}
        self.last: tuple[dict[str, Any], str] | None = None
        self.pairs: list[tuple[str, Any]] = []
        self.encoded: dict[int, tuple[Any, str]] = {}  # id -> (the value, held; its JSON)

    def of(self, labels: dict[str, Any], test_case: str) -> list[tuple[str, Any]]:
        if self.last is None or self.last[0] is not labels or self.last[1] != test_case:
            skip = self.skipped(test_case)
            self.pairs = [(k, self.scalar(v)) for k, v in labels.items() if k not in skip]
            self.last = (labels, test_case)  # held: no new dict can take its place
        return self.pairs

    def scalar(self, value: Any) -> Any:
        if type(value) is not dict and type(value) is not list:
            return _scalar(value)
        hit = self.encoded.get(id(value))
        if hit is None:
            if len(self.encoded) >= self.MEMO:
                self.encoded.clear()
            hit = self.encoded[id(value)] = (value, _scalar(value))
        return hit[1]

    def skipped(self, test_case: str) -> frozenset[str]:
        skip = self.ignored.get(test_case)
        if skip is None:
            ignored = self.description.labels_of(IGNORED, test_case)
            skip = self.ignored[test_case] = ignored | {labelkeys.INVALID}
        return skip


def _value_sets() -> defaultdict[str, set[Any]]:
    return defaultdict(set)


def dimension_keys(
    rows: Iterable[dict[str, Any]], description: RunDescription
) -> dict[tuple[str, str, str], set[str]]:
    """(test case, role, metric) -> the label keys that distinguish its results.

    A declared key whose value is the same in every sample of the test case splits nothing,
    so it is left out (keeps display names short: no "[threads=1]" on a 1-thread test)."""
    # defaultdicts, not setdefault(k, set()): that made a new set for each of ~10^7 labels
    seen: dict[tuple[str, str, str, str], dict[str, set[Any]]] = defaultdict(_value_sets)
    overall: dict[tuple[str, str, str], dict[str, set[Any]]] = defaultdict(_value_sets)
    count: dict[tuple[str, str, str], int] = {}
    with_key: dict[tuple[str, str, str, str], int] = {}  # (test key..., label) -> rows having it
    pairs = _SplitPairs(description)
    for row in rows:
        tkey = (row["test_case"], row["role"], row["metric"])
        count[tkey] = count.get(tkey, 0) + 1
        values = overall[tkey]
        per_cell = seen[(row["cell_id"], *tkey)]
        for k, v in pairs.of(_labels(row), tkey[0]):
            values[k].add(v)
            at = (*tkey, k)
            with_key[at] = with_key.get(at, 0) + 1
            per_cell[k].add(v)
    out: dict[tuple[str, str, str], set[str]] = {}
    for tkey, values in overall.items():
        declared = description.labels_of(DIMENSION, tkey[0])
        out[tkey] = {
            k
            for k, vs in values.items()
            # a constant key splits nothing, unless some samples lack it
            if k in declared and (len(vs) > 1 or with_key[(*tkey, k)] < count[tkey])
        }
    for (_cell, *tkey), values in seen.items():
        out[tuple(tkey)].update(k for k, vs in values.items() if len(vs) > 1)
    return out


def build(rows: list[dict[str, Any]], description: RunDescription) -> list[Group]:
    """Rows of Store.sample_rows and the run's description -> summarized groups, sorted for
    display."""
    primary = description.primary_metrics()
    dims_of = dimension_keys(rows, description)
    first_metric: dict[str, str] = {}
    groups: dict[GroupKey, Group] = {}
    declared = {tc: description.labels_of(DIMENSION, tc) for tc in {r["test_case"] for r in rows}}
    # a different:SIZE neighbour's runs, one beside each of the target's sizes: apart, last
    beside = beside_targets(rows, declared, primary)
    for row, there in zip(rows, beside, strict=True):
        labels = _labels(row)
        tkey = (row["test_case"], row["role"], row["metric"])
        # a sample without a dimension label is not at a point "None" of it: it is left out
        # of the key (a sweep's headline has no phase, a fixed-rate one phase=fixed-rate)
        dims = tuple(
            sorted(
                (
                    (k, _scalar(labels[k]))
                    for k in dims_of.get(tkey, ())
                    if labels.get(k) is not None
                ),
                key=lambda kv: kv[0],
            )
        )
        if there is not None:
            dims = (*dims, (BESIDE_LABEL, there))
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
                key,
                row["unit"],
                bool(row["higher_is_better"]),
                row["metric"] == head,
                declared=frozenset(description.labels_of(DIMENSION, row["test_case"])),
            )
        g._meet(labels)
        if row.get("valid", 1):
            g.values.append(float(row["value"]))
            g.repetitions.append(int(row["repetition"]))
            if labelkeys.RT_THROTTLE_AMBIGUOUS_US in labels:
                stall = sample_stall(float(row["value"]), labels)
                if stall is not None:
                    g.stalls.append((int(row["repetition"]), stall))
        else:
            g.invalid.append(
                InvalidSample(
                    int(row["repetition"]),
                    float(row["value"]),
                    row.get("invalid_reason") or str(labels.get(labelkeys.INVALID) or "invalid"),
                    row["cell_id"],
                )
            )
    for g in groups.values():
        g.summary = summarize(g.values)
    return sorted(groups.values(), key=lambda g: g.key.sort_key())
