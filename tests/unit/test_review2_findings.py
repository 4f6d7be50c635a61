"""Reviewer's failing tests (review2) for the rostore and stormsock2 merges."""

from __future__ import annotations

import sqlite3

from virtbench.store import readonly
from virtbench.store.db import Store
from virtbench.workloads.base import RunContext


def test_symlinked_store_beside_a_live_writer_reads_its_wal(tmp_path):
    """results/virtbench.db -> /data/x.db: SQLite keeps the -wal/-shm beside the link's
    TARGET, ro_uri looks beside the link, sees no -wal and opens immutable=1, which ignores
    the writer's committed, not yet checkpointed cells (here: the whole schema)."""
    data, results = tmp_path / "data", tmp_path / "results"
    data.mkdir()
    results.mkdir()
    w = sqlite3.connect(data / "x.db")
    try:
        w.execute("PRAGMA journal_mode=WAL")
        w.execute("CREATE TABLE t (x)")
        w.execute("INSERT INTO t VALUES (1)")
        w.commit()  # a live runner: committed to its -wal, which it keeps open
        (results / "virtbench.db").symlink_to(data / "x.db")
        r = readonly.connect(results / "virtbench.db")
        try:
            assert r.execute("SELECT count(*) FROM t").fetchone() == (1,)
        finally:
            r.close()
        s = Store(results / "virtbench.db", read_only=True)  # what `results` opens
        try:
            assert "t" in s.conn.tables()
        finally:
            s.close()
    finally:
        w.close()


def test_client_host_without_client_cpus_counts_its_cpus_once_known():
    """A client host without client_cpus: its CPUs are known after its first run (the solo
    peak's sweep, CellClient.facts['cpus']); counted as 1, a fixed-rate step there gets at
    most MAX_PER_CPU = 4 processes (its timeout shortened to fit) although 8 SSH sessions
    and 8 CPUs are free, and its label says '4 per client CPU' of an 8-CPU host."""
    from virtbench.serving.loadgen import client_cpu_count

    class Remote:
        facts = {"cpus": list(range(8))}

    ctx = RunContext(params={}, remote=Remote())
    assert client_cpu_count(ctx) == 8
