"""Why each test case of an adaptive run stopped repeating (runner/adaptive.py): one row per
test case, written when it stops, read by the report, `results` and a resumed run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TABLE = """CREATE TABLE IF NOT EXISTS run_stops (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    test_case TEXT NOT NULL,
    reason TEXT NOT NULL,
    repetitions INTEGER NOT NULL,
    precision_pct REAL,
    worst_group TEXT NOT NULL,
    spent_s REAL NOT NULL,
    detail TEXT NOT NULL,
    PRIMARY KEY (run_id, test_case)
)"""


@dataclass(frozen=True)
class Stop:
    test_case: str
    reason: str  # precision, max-repetitions or budget
    repetitions: int
    precision_pct: float | None  # the worst group's 95% CI half-width, % of its mean
    worst_group: str
    spent_s: float  # measured time of its cells
    detail: str  # the line the console printed


def insert(conn: Any, run_id: str, stop: Stop) -> None:
    conn.execute(
        "DELETE FROM run_stops WHERE run_id = ? AND test_case = ?", (run_id, stop.test_case)
    )
    conn.execute(
        "INSERT INTO run_stops (run_id, test_case, reason, repetitions, precision_pct,"
        " worst_group, spent_s, detail) VALUES (?,?,?,?,?,?,?,?)",
        (
            run_id,
            stop.test_case,
            stop.reason,
            stop.repetitions,
            stop.precision_pct,
            stop.worst_group,
            stop.spent_s,
            stop.detail,
        ),
    )


def select(conn: Any, run_id: str) -> list[Stop]:
    rows = conn.execute(
        "SELECT test_case, reason, repetitions, precision_pct, worst_group, spent_s, detail"
        " FROM run_stops WHERE run_id = ? ORDER BY test_case",
        (run_id,),
    ).fetchall()
    return [Stop(*r) for r in rows]
