"""The store's schema version, its migrations and the run description."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from virtbench.errors import VirtbenchError
from virtbench.results import Sample
from virtbench.runner.describe import describe
from virtbench.store import schema, v1_description
from virtbench.store.db import DB_NAME, Store
from virtbench.store.description import (
    ALL_TEST_CASES,
    DIMENSION,
    IGNORED,
    LabelRole,
    MetricInfo,
    RunDescription,
)
from virtbench.workloads import registry

RUN = "20240101-000000-0001"


def _v1_store(path) -> None:
    """A store as v1 code left it: its schema, one run, two cells, a sample."""
    conn = sqlite3.connect(path)
    for stmt in schema.V1:
        conn.execute(stmt)
    conn.execute(
        "INSERT INTO runs (run_id, name, status, started_at) VALUES (?, 'old', 'finished', 1.0)",
        (RUN,),
    )
    for seq, tc in enumerate(("sysbench-cpu-1t", "vm-image-create")):
        conn.execute(
            "INSERT INTO cells (cell_id, run_id, seq, platform, suite, test_case, scenario,"
            " repetition, status) VALUES (?, ?, ?, 'native', 'cpu', ?, 'solo', 1, 'ok')",
            (f"{RUN}/{seq:04d}", RUN, seq, tc),
        )
    conn.execute(
        "INSERT INTO samples (run_id, cell_id, role, metric, value, unit, higher_is_better)"
        " VALUES (?, ?, 'target', 'events_per_s', 1000.0, 'events/s', 1)",
        (RUN, f"{RUN}/0000"),
    )
    conn.commit()
    conn.close()


def _version(st: Store) -> list[tuple[int]]:
    return st.conn.execute("SELECT version FROM schema_version").fetchall()


def test_v1_store_is_migrated_once_with_the_frozen_description(tmp_path):
    _v1_store(tmp_path / DB_NAME)
    st = Store.open_existing(tmp_path)
    assert _version(st) == [(schema.CURRENT,)]
    d = st.description(RUN)
    assert d == v1_description.describe(["sysbench-cpu-1t", "vm-image-create"])
    assert d.primary_metrics() == {"sysbench-cpu-1t": "events_per_s", "vm-image-create": "create_s"}
    assert {"threads", "disk_gb", "step"} <= d.labels_of(DIMENSION, "sysbench-cpu-1t")
    assert "offered_rate" in d.labels_of(IGNORED, "vm-image-create")
    assert set(d.suites) == {"cpu", "lifecycle"}
    assert len(st.sample_rows(RUN)) == 1  # the data itself is untouched
    rows = st.conn.execute("SELECT COUNT(*) FROM run_metrics").fetchone()
    st.close()
    st = Store.open_existing(tmp_path)  # a second open changes nothing
    assert st.conn.execute("SELECT COUNT(*) FROM run_metrics").fetchone() == rows
    assert st.description(RUN) == d
    st.close()


def test_a_failed_migration_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    _v1_store(tmp_path / DB_NAME)

    def broken(conn):
        raise sqlite3.OperationalError("disk on fire")

    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, broken))
    monkeypatch.setattr(schema, "CURRENT", len(schema.MIGRATIONS) + 1)
    with pytest.raises(VirtbenchError, match="disk on fire"):
        Store.open_existing(tmp_path)
    conn = sqlite3.connect(tmp_path / DB_NAME)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"runs", "cells", "samples", "series"}  # still v1, nothing half done
    conn.close()


def test_a_store_from_a_newer_version_is_refused(tmp_path):
    Store.in_dir(tmp_path).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("UPDATE schema_version SET version = ?", (schema.CURRENT + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(VirtbenchError, match="newer virtbench"):
        Store.open_existing(tmp_path)


def test_new_run_stores_its_description(tmp_path):
    d = RunDescription(
        (MetricInfo("cpu", "t1", "ops", "ops/s", True, True),),
        (LabelRole(ALL_TEST_CASES, "step", DIMENSION), LabelRole("t1", "rate", IGNORED)),
        {"cpu": "CPU throughput"},
    )
    st = Store.in_dir(tmp_path)
    assert _version(st) == [(schema.CURRENT,)]
    st.create_run(RUN, "new", "", "", None, {}, {}, "0", description=d)
    st.add_cells([(f"{RUN}/0000", RUN, 0, "native", "{}", "cpu", "t1", "solo", 1, "{}")])
    st.finish_cell(RUN, f"{RUN}/0000", "ok", [Sample("ops", 1.0, "ops/s", True)], [])
    assert st.description(RUN) == d
    assert st.description("no-such-run") == RunDescription()
    st.close()


LATENCY_PROBES = ("tick", "thread-switch-2", "thread-switch-1000", "thread-switch-sweep")
ISSUE_11_LATENCY_METRICS = (
    "p999_us",
    "raw_max_us",
    "rt_throttle_windows",
    "rt_throttle_total_ms",
    "rt_throttle_max_us",
)


def test_new_runs_are_described_as_v1_code_grouped_them():
    """What v1 declared is still declared the same today: later versions may add metrics,
    suites and labels (new runs store them), never change or drop what v1 said."""
    every = list(registry.load_all())
    now, then = describe(every), v1_description.describe(every)
    # the one deliberate change: container-startup's headline moved from the whole start
    # (startup_ms, still stored with its v1 meaning) to the runtime's part (issue 13 item 6)
    moved = {("container-startup", "startup_ms")}
    then_metrics = {
        dataclasses.replace(m, primary=False) if (m.test_case, m.metric) in moved else m
        for m in then.metrics
    }
    assert then_metrics <= set(now.metrics)
    assert then.suites.items() <= now.suites.items()
    for tc in every:
        assert then.labels_of(DIMENSION, tc) <= now.labels_of(DIMENSION, tc)
        # v1 listed the validity flag too; analysis always ignores it
        assert then.labels_of(IGNORED, tc) <= now.labels_of(IGNORED, tc) | {"invalid"}
