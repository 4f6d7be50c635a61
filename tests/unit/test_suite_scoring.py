"""Schema v3: each suite says how it is scored (inside the workload geomean or beside it;
scored by seed 004 or not); runs stored before read as the code of then scored them."""

from __future__ import annotations

import sqlite3

from virtbench.runner.describe import describe
from virtbench.store import description, schema
from virtbench.store.db import DB_NAME, Store
from virtbench.store.description import RunDescription, SuiteScoring

RUN = "20240101-000000-0003"


def _v2_store(path) -> None:
    """A store as the v2 code left it: migrated to v2, one described run."""
    conn = sqlite3.connect(path)
    for stmt in schema.V1:
        conn.execute(stmt)
    schema.MIGRATIONS[0](conn)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (2)")
    conn.execute(
        "INSERT INTO runs (run_id, name, status, started_at) VALUES (?, 'old', 'finished', 1.0)",
        (RUN,),
    )
    old = describe(["sysbench-cpu-1t", "container-startup"])
    description.insert(conn, RUN, RunDescription(old.metrics, old.labels, old.suites))
    conn.commit()
    conn.close()


def test_v2_runs_read_with_the_v2_scoring(tmp_path):
    _v2_store(tmp_path / DB_NAME)
    st = Store.open_existing(tmp_path)
    d = st.description(RUN)
    assert set(d.suites) == {"cpu", "lifecycle"} and d.scoring == {}
    assert d.scoring_of("lifecycle") == SuiteScoring(workload=True, seed004=True)
    version = st.conn.execute("SELECT version FROM schema_version").fetchone()[0]
    assert version == schema.CURRENT
    st.close()


def test_new_runs_store_each_suites_scoring(tmp_path):
    d = describe(["sysbench-cpu-1t", "container-startup", "fio-iozone", "tick"])
    assert d.scoring == {
        "cpu": SuiteScoring(True, True),
        "disk": SuiteScoring(True, True),
        "latency": SuiteScoring(True, False),  # not a suite seed 004 scores
        "lifecycle": SuiteScoring(False, False),  # start-up: a cost, beside the geomean
    }
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "new", "", "", None, {}, {}, "0", description=d)
    assert st.description(RUN).scoring == d.scoring
    st.close()
