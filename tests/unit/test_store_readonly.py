"""A results directory the user cannot write (a colleague's results, a read-only NFS export, an
archive chmod'ed a-w) can still be read: `results`, `report` and `compare` work there, write
nothing to the store and leave no file beside it (SQLite's WAL reader would leave a -wal and
a -shm); a store of an older schema is migrated in a private copy.

Root ignores file modes, so the commands run in a child process as `nobody` (uid 65534) on a
root-owned directory (0755, the store 0644); run as another user, the directory is made 0555.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import virtbench
from virtbench.fleet import remote
from virtbench.store import readonly, schema
from virtbench.store.db import DB_NAME, Store, open_store

GOLDEN = Path(__file__).parents[1] / "data" / "runs" / "v1"
SUITES, VMLIFE = "20261123-200639-9740", "20261123-201021-dd42"
NOBODY = 65534
SRC = Path(virtbench.__file__).parents[1]  # the tree under test, in the child as here


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory others may read but not write (not under pytest's 0700 tmp root)."""
    d = Path(tempfile.mkdtemp(prefix="vb-test-ro-"))
    d.chmod(0o755)
    yield d
    d.chmod(0o755)
    shutil.rmtree(d)


def _place(d: Path, migrated: bool) -> Path:
    db = d / DB_NAME
    shutil.copyfile(GOLDEN / DB_NAME, db)
    if migrated:
        Store(db).close()  # at CURRENT, checkpointed: no -wal left
    db.chmod(0o644)
    return db


def _as_reader(d: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`virtbench ARGS --results-dir d` as a user who cannot write `d`."""
    as_root = os.geteuid() == 0
    if not as_root:
        d.chmod(0o555)
    try:
        return subprocess.run(
            [sys.executable, "-m", "virtbench.cli", *args, "--results-dir", str(d)],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
            cwd="/",
            preexec_fn=(lambda: (os.setgid(NOBODY), os.setuid(NOBODY))) if as_root else None,
            timeout=120,
        )
    finally:
        if not as_root:
            d.chmod(0o755)


def _state(d: Path) -> dict[str, str]:
    """Every file in `d` and its content's digest."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_current_store_read_only_lists_exports_and_reports(shared_dir):
    _place(shared_dir, migrated=True)
    before = _state(shared_dir)
    assert list(before) == [DB_NAME]
    listed = _as_reader(shared_dir, "results", "--list")
    assert listed.returncode == 0, listed.stderr
    assert [ln.split("\t")[0] for ln in listed.stdout.splitlines()] == sorted(
        p.stem for p in GOLDEN.glob("*.jsonl")
    )
    export = _as_reader(shared_dir, "results", "--run", VMLIFE)
    assert export.returncode == 0, export.stderr
    assert export.stdout == (GOLDEN / f"{VMLIFE}.jsonl").read_text()
    rep = _as_reader(shared_dir, "report", SUITES)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == (GOLDEN / f"{SUITES}.md").read_text()
    assert "HTML report not written" in rep.stderr and "--output" in rep.stderr
    cmp = _as_reader(shared_dir, "compare", SUITES, "--platforms", "native", "native")
    assert cmp.returncode == 0, cmp.stderr
    assert _state(shared_dir) == before  # nothing written, nothing left beside the store


def test_old_schema_read_only_is_migrated_in_a_private_copy(shared_dir):
    _place(shared_dir, migrated=False)
    before = _state(shared_dir)
    got = _as_reader(shared_dir, "results", "--run", VMLIFE, "--format", "jsonl")
    assert got.returncode == 0, got.stderr
    assert got.stdout == (GOLDEN / f"{VMLIFE}.jsonl").read_text()
    assert "schema version 1" in got.stderr and "private copy" in got.stderr
    assert _state(shared_dir) == before
    con = readonly.connect(shared_dir / DB_NAME)
    assert "schema_version" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()


def test_read_only_reader_beside_a_live_writer(shared_dir):
    """A campaign writing (WAL and -shm present, commits not checkpointed) and a user who
    may only read: the reader sees the last commit and writes nothing."""
    db = _place(shared_dir, migrated=True)
    writer = Store(db)
    try:
        with writer.tx() as c:
            c.execute("UPDATE runs SET name = 'renamed-live' WHERE run_id = ?", (SUITES,))
        assert (shared_dir / f"{DB_NAME}-wal").stat().st_size > 0  # in the WAL only
        for side in ("-wal", "-shm"):
            (shared_dir / f"{DB_NAME}{side}").chmod(0o644)
        before = _state(shared_dir)
        got = _as_reader(shared_dir, "results", "--list")
        assert got.returncode == 0, got.stderr
        assert f"{SUITES}\trenamed-live\t" in got.stdout
        assert _state(shared_dir) == before
    finally:
        writer.close()


def test_reading_a_writable_old_store_does_not_migrate_it(tmp_path):
    """A command that only reads never migrates (issue 37, security 6): even who can write
    an old store reads a migrated private copy; the file keeps its version."""
    db = _place(tmp_path, migrated=False)
    st = open_store(None, tmp_path, read=True)
    assert st._private is not None
    assert schema.version(st.conn) == schema.CURRENT
    st.close()
    conn = sqlite3.connect(db)
    assert "schema_version" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()


def test_writable_current_store_is_opened_read_write(tmp_path):
    """Who can write a current store reads it as before (SQLite's locks; lost runs marked)."""
    _place(tmp_path, migrated=True)
    st = open_store(None, tmp_path, read=True)
    assert st.read_note is None and st._private is None
    st.set_run_status(SUITES, "lost")  # writable: the connection is the usual one
    st.close()


def test_fleet_snapshot_leaves_nothing_beside_an_ended_runs_store(tmp_path):
    """The host's runner has ended (its store checkpointed, no -wal): a `?mode=ro` reader
    left a -wal and a -shm behind; the snapshot leaves the directory as it was."""
    db = _place(tmp_path, migrated=True)
    target = tmp_path / "out" / remote.SNAPSHOT
    target.parent.mkdir()
    remote.snapshot(db, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", DB_NAME]
    assert sorted(p.name for p in target.parent.iterdir()) == [remote.SNAPSHOT]
    snap = sqlite3.connect(target)
    assert snap.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert snap.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3
    snap.close()


def test_fleet_snapshot_clears_a_killed_snapshots_side_files(tmp_path):
    """A snapshot killed mid-way left snapshot.tmp's -wal/-shm: the next one removes them
    with snapshot.tmp (a stale WAL must never be replayed into the fresh copy). SQLite
    itself drops a WAL beside an empty file, but only a copy that enters WAL mode removes
    the -shm: a store in rollback mode (here) kept the stale one."""
    db = _place(tmp_path, migrated=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    out = tmp_path / "out"
    out.mkdir()
    stale = sqlite3.connect(out / "snapshot.tmp")
    stale.execute("PRAGMA journal_mode=WAL")
    stale.execute("CREATE TABLE stale (x)")
    stale.commit()
    shutil.copyfile(out / "snapshot.tmp-wal", tmp_path / "wal")
    shutil.copyfile(out / "snapshot.tmp-shm", tmp_path / "shm")
    stale.close()
    for side, kept in (("-wal", "wal"), ("-shm", "shm")):
        shutil.copyfile(tmp_path / kept, out / f"snapshot.tmp{side}")
    remote.snapshot(db, out / remote.SNAPSHOT)
    assert sorted(p.name for p in out.iterdir()) == [remote.SNAPSHOT]
    snap = sqlite3.connect(out / remote.SNAPSHOT)
    assert "stale" not in {r[0] for r in snap.execute("SELECT name FROM sqlite_master")}
    snap.close()


def test_symlinked_store_beside_a_live_writer_reads_its_wal(tmp_path):
    """results/virtbench.db -> /data/x.db: SQLite keeps the -wal/-shm beside the link's
    TARGET; looked for beside the link, no -wal is seen and immutable=1 ignores the
    writer's committed, not yet checkpointed cells (here: the whole schema)."""
    data, results = tmp_path / "data", tmp_path / "results"
    data.mkdir()
    results.mkdir()
    w = Store(data / "x.db")  # a live runner: the schema committed to its -wal, kept open
    try:
        (results / DB_NAME).symlink_to(data / "x.db")
        r = readonly.connect(results / DB_NAME)
        try:
            assert r.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        finally:
            r.close()
        s = Store(results / DB_NAME, read_only=True)  # what `results` opens
        try:
            assert "runs" in s.conn.tables()
        finally:
            s.close()
    finally:
        w.close()


def test_report_replaces_a_read_only_html_in_a_writable_reports_dir(shared_dir):
    """The reports directory is the reader's to write, an older report in it read-only (a
    copied archive): it is replaced (write-then-rename needs only the directory), as
    before; only a directory the user cannot write skips the HTML."""
    _place(shared_dir, migrated=True)
    reports = shared_dir / "reports"
    reports.mkdir()
    # the reader's own directory (a directory anyone may write, not sticky, is refused:
    # issue 37, docs/security.md)
    if os.geteuid() == 0:
        os.chown(reports, NOBODY, NOBODY)
    old = reports / f"{SUITES}.html"
    old.write_text("old report")
    old.chmod(0o444)
    rep = _as_reader(shared_dir, "report", SUITES)
    assert rep.returncode == 0, rep.stderr
    assert "HTML report not written" not in rep.stderr
    assert old.read_text().startswith("<!DOCTYPE html>")


def test_private_copy_of_a_wal_without_its_shm(tmp_path):
    """A writer died and its -shm is gone: SQLite cannot read the WAL in place; the copy
    holds its commits."""
    db = _place(tmp_path, migrated=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("UPDATE runs SET name = 'only-in-wal' WHERE run_id = ?", (SUITES,))
    con.commit()
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copyfile(db, crashed / DB_NAME)
    shutil.copyfile(f"{db}-wal", crashed / f"{DB_NAME}-wal")
    con.close()
    assert readonly.ro_uri(crashed / DB_NAME) is None
    into = tmp_path / "into"
    into.mkdir()
    copy = readonly.private_copy(crashed / DB_NAME, into)
    c = sqlite3.connect(copy)
    row = c.execute("SELECT name FROM runs WHERE run_id = ?", (SUITES,)).fetchone()
    c.close()
    assert row == ("only-in-wal",)
    assert sorted(p.name for p in crashed.iterdir()) == [DB_NAME, f"{DB_NAME}-wal"]
