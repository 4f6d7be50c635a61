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
        # maxima of rare events: no score at all (schema v5; before, per-test-case labels)
        "latency": SuiteScoring(True, False, scored=False),
        "lifecycle": SuiteScoring(False, False),  # start-up: a cost, beside the geomean
    }
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "new", "", "", None, {}, {}, "0", description=d)
    assert st.description(RUN).scoring == d.scoring
    st.close()


def _v4_store(path) -> None:
    """A store as the v4 code left it: latency test cases marked by run_labels rows."""
    conn = sqlite3.connect(path)
    for stmt in schema.V1:
        conn.execute(stmt)
    for step in schema.MIGRATIONS[:3]:
        step(conn)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (4)")
    conn.execute(
        "INSERT INTO runs (run_id, name, status, started_at) VALUES (?, 'old', 'finished', 1.0)",
        (RUN,),
    )
    d = describe(["sysbench-cpu-1t", "tick", "thread-switch-2"])
    conn.executemany(
        "INSERT INTO run_metrics VALUES (?,?,?,?,?,?,?)",
        [
            (RUN, m.suite, m.test_case, m.metric, m.unit, int(m.higher_is_better), int(m.primary))
            for m in d.metrics
        ],
    )
    conn.executemany(
        "INSERT INTO run_labels VALUES (?,?,?,?)",
        [(RUN, r.test_case, r.label, r.role) for r in d.labels]
        + [
            (RUN, tc, description.SCORES, description.UNSCORED)
            for tc in ("tick", "thread-switch-2")
        ],
    )
    conn.executemany(
        "INSERT INTO run_suites (run_id, suite, description, workload, seed004) VALUES (?,?,?,?,?)",
        [(RUN, "cpu", "cpu", 1, 1), (RUN, "latency", "latency", 1, 0)],
    )
    conn.commit()
    conn.close()


def test_v4_unscored_test_cases_become_their_suites_flag(tmp_path):
    _v4_store(tmp_path / DB_NAME)
    st = Store.open_existing(tmp_path)
    d = st.description(RUN)
    assert d.scoring == {
        "cpu": SuiteScoring(True, True),
        "latency": SuiteScoring(True, False, scored=False),
    }
    assert not any(r.role == description.UNSCORED for r in d.labels)
    st.close()


def test_every_suite_of_every_workload_is_described_and_scored():
    """A suite missing from the registry's descriptions once lost its scoring row, and so
    read as a seed 004 suite (wasm got a seed 004 total)."""
    from virtbench.suites import SUITES
    from virtbench.workloads import registry

    every = registry.load_all()
    d = describe(list(every))
    suites = {w.suite for w in every.values()}
    assert suites <= set(SUITES) and suites == set(d.suites) == set(d.scoring)
    assert not d.scoring_of("wasm").seed004 and d.scoring_of("java").seed004


def test_a_suites_facts_live_in_suites_py(monkeypatch):
    """Description and scoring of a run's suite are read from suites.py, the one place."""
    from dataclasses import replace

    from virtbench import suites
    from virtbench.workloads import registry

    wasm = suites.SUITES[suites.WASM]
    monkeypatch.setitem(
        suites.SUITES, suites.WASM, replace(wasm, description="kernels", seed004=True)
    )
    d = describe([w.name for w in registry.by_suite(suites.WASM)])
    assert d.suites == {suites.WASM: "kernels"} and d.scoring_of(suites.WASM).seed004
    assert not hasattr(registry, "SUITES")  # no second table of descriptions
