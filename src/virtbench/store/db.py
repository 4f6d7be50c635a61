"""The results store, the one source of truth for reports and exports: a SQLite file (WAL
mode; the default, in the results directory) or a PostgreSQL database many hosts share.

SQL is kept to the portable subset (no dialect-only functions in queries, JSON kept as TEXT);
backend.py is where the two dialects differ. The schema is versioned and migrated on open
(schema.py); every run carries its description (description.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import labelkeys, ownedtmp
from ..errors import VirtbenchError
from ..results import SOLO_PEAK_SCENARIO, Sample
from . import backend, checked, readonly, schema, stops
from . import description as description_mod
from .backend import Db
from .description import RunDescription

DB_NAME = "virtbench.db"
STORE_ENV = "VIRTBENCH_STORE"  # the --store default (a URL or a SQLite file)


@dataclass
class CellRow:
    cell_id: str
    run_id: str
    seq: int
    platform: str
    platform_json: str
    suite: str
    test_case: str
    scenario: str
    repetition: int
    status: str
    error: str | None
    started_at: float | None
    finished_at: float | None
    labels_json: str | None

    @property
    def labels(self) -> dict[str, Any]:
        return json.loads(self.labels_json or "{}")


class Store:
    def __init__(
        self, location: str | Path, *, read_only: bool = False, reading: bool = False
    ) -> None:
        """A SQLite file path, or a postgresql:// URL. `reading` (a SQLite file, for a
        command that only reads): never create, migrate or switch the journal mode of what
        is there; an empty or foreign file is refused, an older schema is migrated in a
        private copy (`read_note` says so). `read_only` (implies `reading`): also write
        nothing to it or beside it (readonly.py)."""
        shown = backend.redact(str(location)) if backend.is_url(location) else location
        self.path: Path | str = shown if backend.is_url(location) else Path(location)
        self.shared = backend.is_url(location)  # many hosts write to it at once
        self.read_note: str | None = None
        self._private: tempfile.TemporaryDirectory[str] | None = None
        try:
            if (read_only or reading) and not self.shared:
                self.conn: Db = self._open_to_read(Path(location), in_place=not read_only)
            else:
                if not self.shared:
                    Path(location).parent.mkdir(parents=True, exist_ok=True)
                    _identify_file(Path(location))  # before SQLite's WAL switch writes to it
                    why = readonly.unwritable(Path(location))
                    if why is not None:
                        raise VirtbenchError(f"results store {location} cannot be written: {why}")
                self.conn = backend.connect(location)
        except OSError as exc:
            raise VirtbenchError(f"cannot open results store {self.path}: {exc}") from exc
        try:
            schema.upgrade(self.conn)
        except self.conn.errors as exc:
            self.close()
            raise VirtbenchError(f"cannot open results store {self.path}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _open_to_read(self, path: Path, in_place: bool) -> Db:
        """`path` read where it lies when its schema is current (or newer: upgrade refuses
        it): through a read-only connection, or (`in_place`: a store this process may
        write) the usual one, so `results --list` can mark runs lost. Else a private copy
        migrated to CURRENT (removed by close or at exit). Never an empty or foreign file."""
        uri = readonly.ro_uri(path)
        found = None
        if uri is not None:
            conn = backend.SqliteDb(path, uri)
            try:
                found = _known_version(conn)
            except BaseException:
                conn.close()
                raise
            if found >= schema.CURRENT:
                if not in_place:
                    return conn
                conn.close()
                return backend.SqliteDb(path)  # a virtbench store: already in WAL mode
            conn.close()
        # named by this process: `virtbench cleanup` removes it if a crash skips close
        self._private = ownedtmp.tempdir("store")
        copy = readonly.private_copy(path, Path(self._private.name))
        conn = backend.SqliteDb(copy)
        conn.where = str(path)  # messages name the user's store, not the copy
        try:
            found = _known_version(conn) if found is None else found
        except BaseException:
            conn.close()
            raise
        if found < schema.CURRENT and not in_place:  # who can write it: the next run migrates
            self.read_note = (
                f"results store {path} is read-only here and has schema version {found}"
                f" (this virtbench: {schema.CURRENT}): reading a private copy migrated in"
                f" {self._private.name}, removed at exit; open it once as a user who can"
                " write it to migrate it in place"
            )
        return conn

    @classmethod
    def in_dir(cls, results_dir: Path) -> Store:
        return cls(Path(results_dir) / DB_NAME)

    @classmethod
    def open_existing(cls, results_dir: Path) -> Store:
        path = Path(results_dir) / DB_NAME
        if not path.exists():
            raise VirtbenchError(
                f"no results store at {path}; run a campaign first or pass --results-dir"
            )
        return cls(path)

    def close(self) -> None:
        self.conn.close()
        if self._private is not None:
            self._private.cleanup()

    @contextmanager
    def tx(self) -> Iterator[Db]:
        """One transaction: committed as a whole or not at all."""
        with self.conn.transaction() as c:
            yield c

    # --- runs -------------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        name: str,
        campaign_file: str,
        campaign_text: str,
        seed: int | None,
        host: dict[str, Any],
        settings: dict[str, Any],
        version: str,
        *,
        description: RunDescription,
    ) -> None:
        """A new run with what its samples mean (units, primary metrics, label roles)."""
        with self.tx() as c:
            c.execute(
                "INSERT INTO runs (run_id, name, campaign_file, campaign_text, seed, status,"
                " started_at, host_json, settings_json, virtbench_version)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    name,
                    campaign_file,
                    campaign_text,
                    seed,
                    "running",
                    time.time(),
                    json.dumps(host),
                    json.dumps(settings),
                    version,
                ),
            )
            description_mod.insert(c, run_id, description)

    def set_run_status(self, run_id: str, status: str) -> None:
        with self.tx() as c:
            c.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                (status, time.time(), run_id),
            )

    def run(self, run_id: str) -> dict[str, Any]:
        cur = self.conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        row = cur.fetchone()
        if row is None:
            raise VirtbenchError(f"no run '{run_id}' in {self.path}; see: virtbench results --list")
        found = dict(zip([d[0] for d in cur.description], row, strict=True))
        checked.run_row(str(self.path), found)
        return found

    def resolve_run(self, run: str) -> str:
        """'latest' or a run id (or a unique prefix of one) -> run id."""
        if run == "latest":
            row = self.conn.execute(
                "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise VirtbenchError(f"no runs in {self.path} yet; run a campaign first")
            return row[0]
        rows = self.conn.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ?", (run + "%",)
        ).fetchall()
        if len(rows) == 1:
            return rows[0][0]
        known = [r[0] for r in self.conn.execute("SELECT run_id FROM runs ORDER BY started_at")]
        if not rows:
            raise VirtbenchError(
                f"no run '{run}' in {self.path}; known runs: {', '.join(known) or 'none'}"
            )
        raise VirtbenchError(f"run '{run}' is ambiguous; matches: {', '.join(r[0] for r in rows)}")

    def description(self, run_id: str) -> RunDescription:
        return description_mod.select(self.conn, run_id)

    def runs(self) -> list[dict[str, Any]]:
        cur = self.conn.execute(
            "SELECT run_id, name, status, started_at, finished_at FROM runs ORDER BY started_at"
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    # --- cells ------------------------------------------------------------------------
    def add_cells(self, rows: Iterable[tuple]) -> None:
        with self.tx() as c:
            c.executemany(
                "INSERT INTO cells (cell_id, run_id, seq, platform, platform_json, suite,"
                " test_case, scenario, repetition, status, labels_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,'pending',?)",
                list(rows),
            )

    def cells(self, run_id: str) -> list[CellRow]:
        cur = self.conn.execute(
            "SELECT cell_id, run_id, seq, platform, platform_json, suite, test_case, scenario,"
            " repetition, status, error, started_at, finished_at, labels_json"
            " FROM cells WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        rows = [CellRow(*r) for r in cur.fetchall()]
        checked.cell_rows(str(self.path), rows)
        return rows

    def cell_durations(self) -> dict[tuple[str, str], list[float]]:
        """(platform, test case) -> the measured time of every finished ok cell of every run
        (solo peaks left out): what `run --dry-run` estimates a plan from."""
        cur = self.conn.execute(
            "SELECT platform, test_case, finished_at - started_at FROM cells"
            " WHERE status = 'ok' AND started_at IS NOT NULL AND finished_at IS NOT NULL"
            " AND scenario <> ?",
            (SOLO_PEAK_SCENARIO,),
        )
        out: dict[tuple[str, str], list[float]] = {}
        for platform, test_case, seconds in cur.fetchall():
            if seconds is not None and seconds >= 0:
                out.setdefault((platform, test_case), []).append(float(seconds))
        return out

    def start_cell(self, cell_id: str) -> None:
        with self.tx() as c:
            c.execute(
                "UPDATE cells SET status = 'running', started_at = ?, error = NULL"
                " WHERE cell_id = ?",
                (time.time(), cell_id),
            )

    def finish_cell(
        self,
        run_id: str,
        cell_id: str,
        status: str,
        samples: list[Sample],
        series: list[tuple[str, str, float, float, str]],
        error: str | None = None,
        labels: dict[str, Any] | None = None,
    ) -> None:
        """Commit a cell's samples, series and status atomically: a crash keeps all or none.
        A sample whose value is not finite (a tool printed nan) is kept, flagged invalid."""
        samples = [_storable(s) for s in samples]
        # a plot point that is not a number has nowhere to go (t and value are NOT NULL)
        series = [p for p in series if math.isfinite(p[2]) and math.isfinite(p[3])]
        with self.tx() as c:
            c.execute("DELETE FROM samples WHERE cell_id = ?", (cell_id,))
            c.execute("DELETE FROM series WHERE cell_id = ?", (cell_id,))
            c.executemany(
                "INSERT INTO samples (run_id, cell_id, role, metric, value, unit,"
                " higher_is_better, valid, invalid_reason, labels_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        run_id,
                        cell_id,
                        s.role,
                        s.metric,
                        s.value,
                        s.unit,
                        int(s.higher_is_better),
                        0 if s.labels.get(labelkeys.INVALID) else 1,
                        s.labels.get(labelkeys.INVALID) or None,
                        json.dumps(s.labels, default=str),
                    )
                    for s in samples
                ],
            )
            c.executemany(
                "INSERT INTO series (run_id, cell_id, role, metric, t, value, unit)"
                " VALUES (?,?,?,?,?,?,?)",
                [(run_id, cell_id, *p) for p in series],
            )
            if labels is not None:
                c.execute(
                    "UPDATE cells SET labels_json = ? WHERE cell_id = ?",
                    (json.dumps(labels, default=str), cell_id),
                )
            c.execute(
                "UPDATE cells SET status = ?, error = ?, finished_at = ? WHERE cell_id = ?",
                (status, error, time.time(), cell_id),
            )

    def invalidate(self, reasons: dict[int, str]) -> None:
        """Flag stored samples invalid (valid = 0, the reason also as their `invalid` label,
        as a workload would have set it) in one transaction; a cross-sample rule's verdict."""
        with self.tx() as c:
            for sample_id, reason in reasons.items():
                row = c.execute(
                    "SELECT labels_json FROM samples WHERE sample_id = ?", (sample_id,)
                ).fetchone()
                labels = json.loads((row[0] if row else None) or "{}")
                labels[labelkeys.INVALID] = reason
                c.execute(
                    "UPDATE samples SET valid = 0, invalid_reason = ?, labels_json = ?"
                    " WHERE sample_id = ?",
                    (reason, json.dumps(labels, default=str), sample_id),
                )

    def _dicts(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        """The rows as dicts, one object per distinct text: a run's rows repeat a few texts
        (platform, metric, a cell's labels, a sweep step's labels on a dozen metrics), and
        the driver makes a new copy of each for every row (10^6 rows in a co-location run)."""
        cur = self.conn.execute(sql, params)
        cols = [d[0] for d in cur.description]
        texts: dict[str, str] = {}
        # row by row: fetchall() held every row's own copies of its texts at once
        return [dict(zip(cols, _shared(r, texts), strict=True)) for r in cur]

    # --- reading ----------------------------------------------------------------------
    def sample_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every sample of a run joined with its cell: the rows of the export contract."""
        rows = self._dicts(
            "SELECT s.run_id, s.cell_id, c.platform, c.suite, c.test_case, c.scenario, s.role,"
            " c.repetition, s.metric, s.value, s.unit, s.higher_is_better, s.valid,"
            " s.invalid_reason, s.labels_json, c.labels_json AS cell_labels, s.sample_id"
            " FROM samples s JOIN cells c ON c.cell_id = s.cell_id"
            " WHERE s.run_id = ? ORDER BY c.seq, s.sample_id",
            (run_id,),
        )
        checked.sample_rows(str(self.path), rows)
        return rows

    def series_rows(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._dicts(
            "SELECT p.cell_id, c.platform, c.suite, c.test_case, c.scenario, c.repetition,"
            " p.role, p.metric, p.t, p.value, p.unit FROM series p"
            " JOIN cells c ON c.cell_id = p.cell_id WHERE p.run_id = ? ORDER BY p.point_id",
            (run_id,),
        )
        checked.series_rows(str(self.path), rows)
        return rows

    # --- whole rows, for import and the run fallback ----------------------------------------
    def run_tables(self) -> list[str]:
        """Tables holding rows of a run, parents first (cells before what refers to them)."""
        tables = sorted(t for t in self.conn.tables() if "run_id" in self.conn.columns(t))
        first = [t for t in ("runs", "cells") if t in tables]
        return first + [t for t in tables if t not in first]

    def rows(self, table: str, run_id: str, cell_id: str | None = None) -> list[dict[str, Any]]:
        """A run's (or one cell's) rows of `table`, in the order they were stored."""
        where, params = "run_id = ?", [run_id]
        if cell_id is not None:
            where, params = where + " AND cell_id = ?", [*params, cell_id]
        key = schema.IDENTITY.get(table)
        order = f" ORDER BY {key}" if key else ""
        return self._dicts(f"SELECT * FROM {table} WHERE {where}{order}", params)

    @staticmethod
    def insert_rows(c: Db, table: str, rows: list[dict[str, Any]]) -> None:
        """Insert whole rows (inside the caller's transaction); this store numbers them."""
        if not rows:
            return
        cols = [k for k in rows[0] if k != schema.IDENTITY.get(table)]
        c.executemany(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [tuple(r[k] for k in cols) for r in rows],
        )

    # --- stale states (issue 16): statuses in the existing columns, no schema change ------
    def settle_cells(self, run_id: str, from_status: str, to_status: str) -> int:
        """Give every `from_status` cell of the run `to_status`, finished_at now (when it was
        interrupted or found lost); returns how many."""
        with self.tx() as c:
            cur = c.execute(
                "UPDATE cells SET status = ?, finished_at = ? WHERE run_id = ? AND status = ?",
                (to_status, time.time(), run_id, from_status),
            )
            return cur.rowcount

    def runs_with_running(self) -> list[str]:
        """Runs whose status or some cell's status is still 'running'."""
        rows = self.conn.execute(
            "SELECT run_id FROM runs WHERE status = 'running'"
            " UNION SELECT DISTINCT run_id FROM cells WHERE status = 'running'"
        ).fetchall()
        return [r[0] for r in rows]

    # --- adaptive repetitions (schema v4) ----------------------------------------------
    def record_stop(self, run_id: str, stop: stops.Stop) -> None:
        with self.tx() as c:
            stops.insert(c, run_id, stop)

    def run_stops(self, run_id: str) -> list[stops.Stop]:
        return stops.select(self.conn, run_id)


def _storable(sample: Sample) -> Sample:
    """`sample` as the store can hold it: a non-finite value is no measurement (invalid,
    the value named in the reason); NaN cannot be stored at all (SQLite makes it NULL) and
    is kept as 0.0 beside that reason, infinities as they are."""
    if math.isfinite(sample.value):
        return sample
    labels = dict(sample.labels)
    labels.setdefault(labelkeys.INVALID, f"the value was {sample.value}, not a finite number")
    value = 0.0 if math.isnan(sample.value) else sample.value
    return dataclasses.replace(sample, value=value, labels=labels)


def _known_version(conn: Db) -> int:
    """The schema version of a store a command only reads; an empty database is not one."""
    found = schema.version(conn)
    if found is None:
        raise schema.NotAStore(
            f"{conn.where} is not a virtbench store: an empty database (no tables)"
        )
    return found


def _identify_file(path: Path) -> None:
    """Refuse a file that is not a virtbench store before a writing connection touches it
    (SQLite's WAL switch and the schema's CREATE TABLEs would write into it). Absent or
    empty files become new stores."""
    try:
        if not path.exists() or path.stat().st_size == 0:
            return
    except OSError as exc:
        raise VirtbenchError(f"cannot open results store {path}: {exc.strerror}") from exc
    uri = readonly.ro_uri(path)
    if uri is None:
        return  # -wal without -shm: a virtbench runner died; the writer opens it
    conn = backend.SqliteDb(path, uri)
    try:
        schema.version(conn)
    finally:
        conn.close()


def _shared(row: Iterable[Any], texts: dict[str, str]) -> Iterator[Any]:
    """The row's values, each text replaced by the first equal one seen (kept in `texts`)."""
    return (texts.setdefault(v, v) if type(v) is str else v for v in row)


def open_store(
    store: str | None, results_dir: Path, *, create: bool = False, read: bool = False
) -> Store:
    """The store named by --store (a postgresql:// URL, a SQLite file, or a directory holding
    virtbench.db), else RESULTS_DIR/virtbench.db. A SQLite store must exist unless `create`.
    `read`: for a command that only reads; a SQLite store this process cannot write (another
    user's, a read-only mount) is then read without writing it. One it can write is opened
    as usual: migrated in place, and read beside a running campaign through SQLite's locks."""
    if store and backend.is_url(store):
        return Store(store)
    path = Path(store) if store else Path(results_dir) / DB_NAME
    if path.is_dir():
        path = path / DB_NAME
    if not create and not path.exists():
        hint = "check the path" if store else "run a campaign first or pass --results-dir/--store"
        raise VirtbenchError(f"no results store at {path}; {hint}")
    if read:
        return Store(path, reading=True, read_only=not readonly.writable(path))
    return Store(path)
