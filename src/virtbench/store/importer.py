"""`virtbench import`: copy runs from SQLite results files (hosts that ran offline, a run's
fallback file) into a store, typically the shared PostgreSQL one.

The file is read through a private copy (readonly.private_copy: with what its WAL holds),
upgraded there by the migrations, so the file itself is left as it was (and may be
read-only). Each run is copied in one transaction. Importing is idempotent: a run already
in the store is skipped, except that cells finished in the file and not in the store (a run
whose store went away mid-run kept them in its fallback file) are added, so importing the
same file again adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import ownedtmp
from ..errors import VirtbenchError
from ..parsing import printable
from . import backend, checked, readonly, schema
from .db import DB_NAME, Store

DONE = ("ok", "failed", "timeout")  # finished cells (runner.states.DONE; store stays below it)
CELL_COLUMNS = ("status", "error", "started_at", "finished_at", "labels_json")


@dataclass
class Imported:
    run_id: str
    what: str  # "imported", "skipped" or "merged"
    cells: int
    samples: int

    def line(self, store: str) -> str:
        if self.what == "imported":
            return f"{self.run_id}: imported ({self.cells} cells, {self.samples} samples)"
        if self.what == "merged":
            return (
                f"{self.run_id}: already in {store}; added {self.cells} cells finished in the"
                f" file but not in the store ({self.samples} samples)"
            )
        return f"{self.run_id}: already in {store}, skipped"


def _source(path: Path) -> Path:
    """The results file `path` names (a results directory holds virtbench.db)."""
    if path.is_dir():
        path = path / DB_NAME
    if not path.is_file():
        raise VirtbenchError(f"no results file at {path}")
    return path


def import_file(path: Path, dst: Store, log: Callable[[str], None]) -> list[Imported]:
    """Copy every run of the SQLite file at `path` into `dst`; one line per run to `log`.
    Each run is copied whole or not at all; a run that cannot be (a damaged page, a clash)
    stops the import with a message naming the file, the run and what was copied before."""
    with ownedtmp.tempdir("import") as tmp:  # `cleanup` removes it if a crash skips `with`
        try:
            copy = readonly.private_copy(_source(Path(path)), Path(tmp))
        except VirtbenchError as exc:
            raise VirtbenchError(f"import: {exc}") from exc.__cause__
        try:
            _known(copy)  # an empty or foreign file is refused, not made a store
            src = Store(copy)  # our private copy: migrated where it lies
        except VirtbenchError as exc:
            raise VirtbenchError(f"import: {_named(exc, copy, path)}") from exc
        done: list[Imported] = []
        run_id = None
        try:
            for run in src.runs():
                run_id = run["run_id"]
                result = import_run(src, dst, run_id)
                log(result.line(str(dst.path)))
                done.append(result)
            return done
        except VirtbenchError as exc:
            copied = [d.run_id for d in done if d.what != "skipped"]
            where = f" at run {run_id}" if run_id else ""
            raise VirtbenchError(
                f"import: {path}{where}: {_named(exc, copy, path)}; nothing of that run was"
                f" copied; runs copied before it: {', '.join(copied) or 'none'}"
            ) from exc
        finally:
            src.close()


def _known(copy: Path) -> None:
    conn = backend.SqliteDb(copy)
    try:
        if schema.version(conn) is None:
            raise backend.NotAStore(f"{copy} is not a virtbench store: an empty database")
    finally:
        conn.close()


def _named(exc: Exception, copy: Path, path: Path) -> str:
    """The message with the private copy's path replaced by the file the user gave."""
    return str(exc).replace(str(copy), str(path))


def import_run(src: Store, dst: Store, run_id: str) -> Imported:
    if dst.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
        return _merge(src, dst, run_id)
    rows = {t: src.rows(t, run_id) for t in src.run_tables()}
    _check_rows(src, run_id, rows)
    _check_clash(dst, run_id, rows["cells"])
    with _constraint_named(dst, run_id), dst.tx() as c:
        for table, table_rows in rows.items():
            Store.insert_rows(c, table, table_rows)
    return Imported(run_id, "imported", len(rows["cells"]), len(rows["samples"]))


def _check_rows(src: Store, run_id: str, rows: dict[str, list[dict[str, Any]]]) -> None:
    """Samples and series of the run all belong to its cells (a file whose cells were cut
    away is refused, not half imported)."""
    where = str(src.path)
    for run in rows["runs"]:
        checked.run_row(where, run)
    for cell in rows["cells"]:
        for col in checked.CELL_JSON:
            checked.json_text(where, f"cell {printable(str(cell['cell_id']))} {col}", cell[col])
    checked.sample_rows(where, rows.get("samples", []))  # numbers, JSON labels
    checked.series_rows(where, rows.get("series", []))
    cells = {r["cell_id"] for r in rows["cells"]}
    for table in ("samples", "series"):
        orphans = sorted({r["cell_id"] for r in rows.get(table, [])} - cells)
        if orphans:
            raise VirtbenchError(
                f"{src.path}: run {run_id} has {table} of cells it does not hold"
                f" ({', '.join(printable(str(o)) for o in orphans[:3])}"
                f"{', ...' if len(orphans) > 3 else ''}): a damaged store"
            )


def _check_clash(dst: Store, run_id: str, cells: list[dict[str, Any]]) -> None:
    """A cell id of the run already held by another run of the store (ids embed the run id,
    so only a hand-edited or damaged file clashes)."""
    for row in cells:
        held = dst.conn.execute(
            "SELECT run_id FROM cells WHERE cell_id = ?", (row["cell_id"],)
        ).fetchone()
        if held is not None and held[0] != run_id:
            raise VirtbenchError(
                f"cell id {printable(str(row['cell_id']))} of run {run_id} is already in"
                f" {dst.path}, in run {printable(str(held[0]))}"
            )


@contextmanager
def _constraint_named(dst: Store, run_id: str) -> Iterator[None]:
    """A constraint the rows break (NOT NULL, a key) is the file's fault: named, no traceback."""
    try:
        yield
    except dst.conn.errors as exc:
        raise VirtbenchError(
            f"run {run_id} cannot be stored in {dst.path}: {' '.join(str(exc).split())}"
        ) from exc


def _merge(src: Store, dst: Store, run_id: str) -> Imported:
    """Cells finished in `src` and not in `dst`, with their samples and series; the run's
    status too if the store never learnt how it ended."""
    there = {c.cell_id: c.status for c in dst.cells(run_id)}
    new = [c for c in src.cells(run_id) if c.status in DONE and there.get(c.cell_id) not in DONE]
    if not new:
        return Imported(run_id, "skipped", 0, 0)
    samples = 0
    with _constraint_named(dst, run_id), dst.tx() as c:
        for cell in new:
            if cell.cell_id not in there:  # added during the fallback (a solo-peak cell)
                row = [r for r in src.rows("cells", run_id) if r["cell_id"] == cell.cell_id]
                Store.insert_rows(c, "cells", row)
            for table in ("samples", "series"):
                c.execute(f"DELETE FROM {table} WHERE cell_id = ?", (cell.cell_id,))
                rows = src.rows(table, run_id, cell.cell_id)
                Store.insert_rows(c, table, rows)
                samples += len(rows) if table == "samples" else 0
            values = [getattr(cell, k) for k in CELL_COLUMNS]
            c.execute(
                f"UPDATE cells SET {', '.join(k + ' = ?' for k in CELL_COLUMNS)} WHERE cell_id = ?",
                (*values, cell.cell_id),
            )
        ended = src.run(run_id)
        c.execute(
            "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ? AND status <> 'finished'",
            (ended["status"], ended["finished_at"], run_id),
        )
    return Imported(run_id, "merged", len(new), samples)
