"""What a run's samples mean, stored beside them: units, direction, primary metrics, which
labels are grouping dimensions and which are ignored, and the suites' one-line notes.

The runner writes it when a run is created (from the workload registry); analysis and report
read it back, so they group and label a run without importing any workload, and a run stored
by another version reads as it was meant. Plain data and portable SQL only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_TEST_CASES = ""  # a label role that holds for every test case of the run
DIMENSION = "dimension"  # the label identifies distinct results (a block size, a sweep step)
IGNORED = "ignored"  # the label never splits results (a per-run fact)
# Before schema v5 a test case whose results entered no score had a run_labels row
# (label SCORES, role UNSCORED); v5 made it the suite's `scored` flag and moved those rows.
UNSCORED = "unscored"
SCORES = "scores"

TABLES = (
    """CREATE TABLE IF NOT EXISTS run_metrics (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    suite TEXT NOT NULL,
    test_case TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    higher_is_better INTEGER NOT NULL,
    is_primary INTEGER NOT NULL,
    PRIMARY KEY (run_id, test_case, metric)
)""",
    """CREATE TABLE IF NOT EXISTS run_labels (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    test_case TEXT NOT NULL,
    label TEXT NOT NULL,
    role TEXT NOT NULL,
    PRIMARY KEY (run_id, test_case, label, role)
)""",
    """CREATE TABLE IF NOT EXISTS run_suites (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    suite TEXT NOT NULL,
    description TEXT NOT NULL,
    PRIMARY KEY (run_id, suite)
)""",
)


@dataclass(frozen=True)
class MetricInfo:
    suite: str
    test_case: str
    metric: str
    unit: str
    higher_is_better: bool
    primary: bool  # the test case's headline metric (charts, scores)


@dataclass(frozen=True)
class LabelRole:
    test_case: str  # ALL_TEST_CASES or one test case
    label: str
    role: str  # DIMENSION or IGNORED


@dataclass(frozen=True)
class SuiteScoring:
    """How a suite enters the scores (run_suites.workload / seed004 / scored; NULL in runs
    stored before the column existed, which reads as true: what the code of then did)."""

    workload: bool = True  # a slowdown of the workload: inside the geomean "all"
    seed004: bool = True  # a suite seed 004 scores (Table 2): it gets a total score
    # False: no score at all, neither a geomean nor a seed 004 total (a latency maximum is
    # not a throughput: a geometric mean or sum of them means nothing)
    scored: bool = True


@dataclass(frozen=True)
class RunDescription:
    metrics: tuple[MetricInfo, ...] = ()
    labels: tuple[LabelRole, ...] = ()
    suites: dict[str, str] = field(default_factory=dict)  # suite -> one-line description
    scoring: dict[str, SuiteScoring] = field(default_factory=dict)  # suite -> its flags
    # (role, test case) -> labels_of: a report asks once per sample (10^6 in a co-location run)
    _labels_of: dict[tuple[str, str], frozenset[str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def scoring_of(self, suite: str) -> SuiteScoring:
        return self.scoring.get(suite, SuiteScoring())

    def primary_metrics(self) -> dict[str, str]:
        """test case -> its primary metric."""
        return {m.test_case: m.metric for m in self.metrics if m.primary}

    def labels_of(self, role: str, test_case: str) -> frozenset[str]:
        found = self._labels_of.get((role, test_case))
        if found is None:
            found = self._labels_of[(role, test_case)] = frozenset(
                r.label
                for r in self.labels
                if r.role == role and r.test_case in (ALL_TEST_CASES, test_case)
            )
        return found


def insert(conn: Any, run_id: str, d: RunDescription) -> None:
    """Write a run's description (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO run_metrics (run_id, suite, test_case, metric, unit, higher_is_better,"
        " is_primary) VALUES (?,?,?,?,?,?,?)",
        [
            (
                run_id,
                m.suite,
                m.test_case,
                m.metric,
                m.unit,
                int(m.higher_is_better),
                int(m.primary),
            )
            for m in d.metrics
        ],
    )
    conn.executemany(
        "INSERT INTO run_labels (run_id, test_case, label, role) VALUES (?,?,?,?)",
        [(run_id, r.test_case, r.label, r.role) for r in d.labels],
    )
    conn.executemany(
        "INSERT INTO run_suites (run_id, suite, description) VALUES (?,?,?)",
        [(run_id, s, text) for s, text in d.suites.items()],
    )
    flags = [
        (int(f.workload), int(f.seed004), int(f.scored), run_id, s) for s, f in d.scoring.items()
    ]
    if flags:  # none in the frozen v1 descriptions (written before the v3 columns exist)
        conn.executemany(
            "UPDATE run_suites SET workload = ?, seed004 = ?, scored = ?"
            " WHERE run_id = ? AND suite = ?",
            flags,
        )


def select(conn: Any, run_id: str) -> RunDescription:
    metrics = conn.execute(
        "SELECT suite, test_case, metric, unit, higher_is_better, is_primary FROM run_metrics"
        " WHERE run_id = ? ORDER BY suite, test_case, metric",
        (run_id,),
    ).fetchall()
    labels = conn.execute(
        "SELECT test_case, label, role FROM run_labels WHERE run_id = ?"
        " ORDER BY test_case, role, label",
        (run_id,),
    ).fetchall()
    suites = conn.execute(
        "SELECT suite, description, workload, seed004, scored FROM run_suites WHERE run_id = ?"
        " ORDER BY suite",
        (run_id,),
    ).fetchall()
    return RunDescription(
        tuple(MetricInfo(s, tc, m, u, bool(h), bool(p)) for s, tc, m, u, h, p in metrics),
        tuple(LabelRole(*r) for r in labels),
        {s: text for s, text, _w, _s, _sc in suites},
        {
            s: SuiteScoring(bool(w), bool(sd), sc is None or bool(sc))
            for s, _t, w, sd, sc in suites
            if w is not None and sd is not None
        },
    )


def global_labels(dimensions: Iterable[str], ignored: Iterable[str]) -> tuple[LabelRole, ...]:
    """Label roles that hold for every test case of a run."""
    return tuple(LabelRole(ALL_TEST_CASES, k, DIMENSION) for k in sorted(set(dimensions))) + tuple(
        LabelRole(ALL_TEST_CASES, k, IGNORED) for k in sorted(set(ignored))
    )
