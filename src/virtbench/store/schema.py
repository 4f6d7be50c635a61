"""The store's schema, its version and the migrations between versions.

The version is a row of `schema_version` (portable, unlike SQLite's PRAGMA user_version).
SQLite and PostgreSQL stores share this one list of steps: a step runs portable SQL through
the store's connection (backend.Db: `?` placeholders, SQLite type names, translated there).
A store without that table is version 1: the schema before it was versioned. Opening a store
runs the missing steps of MIGRATIONS in one transaction, so an old store is upgraded once and
either completely or not at all. A step is a function of the connection; add new ones at the
end, never edit an old one.

    v1  runs, cells, samples, series
    v2  run_metrics, run_labels, run_suites: every run describes its samples (description.py);
        runs stored at v1 get the description v1 code implied (v1_description.py)
    v3  run_suites.workload, run_suites.seed004: how each suite enters the scores (inside the
        geomean "all" or beside it; scored by seed 004 or not); NULL for older runs, read as
        "both", which is what the code that stored them did
    v4  run_stops: why each test case of an adaptive run stopped repeating (stops.py)
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import VirtbenchError
from . import description, stops, v1_description
from .backend import DamagedStore, Db, NotAStore

# Version 1 exactly as it was created; never edit (later versions migrate from it).
V1 = (
    """CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    campaign_file TEXT,
    campaign_text TEXT,
    seed INTEGER,
    status TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    host_json TEXT,
    settings_json TEXT,
    virtbench_version TEXT
)""",
    """CREATE TABLE IF NOT EXISTS cells (
    cell_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    platform TEXT NOT NULL,
    platform_json TEXT,
    suite TEXT NOT NULL,
    test_case TEXT NOT NULL,
    scenario TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    started_at REAL,
    finished_at REAL,
    labels_json TEXT
)""",
    "CREATE INDEX IF NOT EXISTS cells_run ON cells(run_id, seq)",
    """CREATE TABLE IF NOT EXISTS samples (
    sample_id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    cell_id TEXT NOT NULL REFERENCES cells(cell_id),
    role TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    higher_is_better INTEGER NOT NULL,
    valid INTEGER NOT NULL DEFAULT 1,
    invalid_reason TEXT,
    labels_json TEXT
)""",
    "CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, cell_id)",
    """CREATE TABLE IF NOT EXISTS series (
    point_id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    cell_id TEXT NOT NULL,
    role TEXT NOT NULL,
    metric TEXT NOT NULL,
    t REAL NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS series_cell ON series(run_id, cell_id)",
)

Step = Callable[[Db], None]
# auto-numbered keys (INTEGER PRIMARY KEY): each store numbers its own rows, an import never
# copies them
IDENTITY = {"samples": "sample_id", "series": "point_id"}


def _v1_to_v2(conn: Db) -> None:
    """Runs describe themselves; the runs stored so far get what v1 code implied."""
    for stmt in description.TABLES:
        conn.execute(stmt)
    for (run_id,) in conn.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall():
        cases = conn.execute(
            "SELECT DISTINCT test_case FROM cells WHERE run_id = ?", (run_id,)
        ).fetchall()
        description.insert(conn, run_id, v1_description.describe(tc for (tc,) in cases))


def _v2_to_v3(conn: Db) -> None:
    """Suites say how they are scored; older runs keep NULL (= the v2 behaviour)."""
    conn.execute("ALTER TABLE run_suites ADD COLUMN workload INTEGER")
    conn.execute("ALTER TABLE run_suites ADD COLUMN seed004 INTEGER")


def _v3_to_v4(conn: Db) -> None:
    """Adaptive runs record why each test case stopped; older runs had fixed repetitions."""
    conn.execute(stops.TABLE)


def _v4_to_v5(conn: Db) -> None:
    """One scoring flag per suite: a suite may enter no score at all (`scored` = 0). The
    per-test-case rows that said so before (run_labels role 'unscored', only ever written for
    the latency suite's test cases, every one of them) become their suite's flag."""
    conn.execute("ALTER TABLE run_suites ADD COLUMN scored INTEGER")
    unscored = conn.execute(
        "SELECT DISTINCT m.run_id, m.suite FROM run_metrics m JOIN run_labels l"
        " ON l.run_id = m.run_id AND l.test_case = m.test_case"
        " WHERE l.label = ? AND l.role = ?",
        (description.SCORES, description.UNSCORED),
    ).fetchall()
    for run_id, suite in unscored:
        # a run without v3 flags read them as true; keep that, and score nothing of the suite
        conn.execute(
            "UPDATE run_suites SET scored = 0, workload = COALESCE(workload, 1),"
            " seed004 = COALESCE(seed004, 1) WHERE run_id = ? AND suite = ?",
            (run_id, suite),
        )
    conn.execute(
        "DELETE FROM run_labels WHERE label = ? AND role = ?",
        (description.SCORES, description.UNSCORED),
    )


# MIGRATIONS[i] upgrades version i+1 to i+2; append new steps, never reorder
MIGRATIONS: list[Step] = [_v1_to_v2, _v2_to_v3, _v3_to_v4, _v4_to_v5]
CURRENT = len(MIGRATIONS) + 1


# the tables a store of each version has (added by that version's step): a store whose
# version row promises more than it holds is damaged, not empty
TABLES_SINCE = {
    1: ("runs", "cells", "samples", "series"),
    2: ("run_metrics", "run_labels", "run_suites"),
    4: ("run_stops",),
}


def version(conn: Db) -> int | None:
    """The stored version, 1 for a store from before versioning, None for an empty
    database. NotAStore for a database with tables that are not virtbench's; DamagedStore
    for a version row that is not a version or tables its version must have missing."""
    try:
        tables = {t for t in conn.tables() if not t.startswith("sqlite_")}
        row = None
        if "schema_version" in tables:
            row = conn.execute("SELECT version FROM schema_version").fetchone()
    except conn.errors as exc:
        raise unreadable(conn, exc) from exc
    if not tables:
        return None
    if "schema_version" not in tables and "runs" not in tables:
        shown = ", ".join(sorted(tables)[:8]) + (", ..." if len(tables) > 8 else "")
        raise NotAStore(
            f"{conn.where} is not a virtbench store: its tables ({shown}) are not"
            " virtbench's; give a virtbench results store (virtbench.db)"
        )
    found = 1 if row is None else row[0]
    if type(found) is not int or found < 1:  # noqa: E721 - a bool or a REAL is not a version
        raise DamagedStore(
            f"results store {conn.where} is damaged: schema_version holds {found!r}, not a"
            f" version number (1..{CURRENT})"
        )
    missing = (
        [t for since, names in TABLES_SINCE.items() if since <= found for t in names]
        if found <= CURRENT
        else []
    )
    missing = [t for t in missing if t not in tables]
    if missing:
        raise DamagedStore(
            f"results store {conn.where} is damaged: schema version {found} but table(s)"
            f" {', '.join(missing)} missing"
        )
    return found


def unreadable(conn: Db, exc: Exception) -> VirtbenchError:
    """The error to raise for a driver error met while identifying a store: a file that is
    not SQLite is not a store; anything else is a damaged (or unreachable) one."""
    text = " ".join(str(exc).split())
    if "not a database" in text:
        return NotAStore(f"{conn.where} is not a virtbench store: not an SQLite database ({text})")
    return DamagedStore(f"results store {conn.where} cannot be read: {text}")


def refuse_newer(conn: Db, found: int | None) -> None:
    if found is not None and found > CURRENT:
        raise VirtbenchError(
            f"results store {conn.where} has schema version {found}; this virtbench"
            f" reads up to {CURRENT}: use a newer virtbench"
        )


def upgrade(conn: Db) -> None:
    """Bring the store to CURRENT, creating it if it is empty, in one transaction."""
    found = version(conn)
    if found == CURRENT:
        return
    refuse_newer(conn, found)  # before taking the write lock: a read-only store says why
    with conn.migrating():  # one connection upgrades; the others wait, then see it done
        found = version(conn) or 1  # an empty store is created at v1 and migrated up
        if found == CURRENT:
            return
        refuse_newer(conn, found)
        for stmt in V1:
            conn.execute(stmt)
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        for step in MIGRATIONS[found - 1 :]:
            step(conn)
        conn.execute("DELETE FROM schema_version")
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (CURRENT,))
