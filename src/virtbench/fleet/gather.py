"""Every host's results in one store: each fetched host store (RESULTS/fleet/<id>/HOST.db,
kept as it is) is imported into the fleet's store (`--store`, else RESULTS_DIR/virtbench.db).
Importing is idempotent: a run already there only gains the cells it finished since, so a
lost host imported now and again after `fleet resume` ends up once, complete."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import VirtbenchError
from ..store import importer, readonly
from ..store.db import open_store
from .state import Fleet


def gather(fleet: Fleet, store: str | None, results_dir: Path, log: Callable[[str], None]) -> bool:
    """Import every host's store; False (with a line saying how to import them later) if
    the store could not take them. The host files are kept either way."""
    kept = [h for h in fleet.hosts if fleet.db(h).exists()]
    if not kept:
        log("no host stored any results")
        return True
    try:
        dst = open_store(store, results_dir, create=True)
    except VirtbenchError as exc:
        log(f"results not imported: {exc}")
        _later(fleet, kept, log)
        return False
    ok = True
    t0 = time.monotonic()
    try:
        for host in kept:
            t1 = time.monotonic()
            try:
                for r in importer.import_file(fleet.db(host), dst, lambda _line: None):
                    log(f"{host}: {r.line(str(dst.path))}")
            except VirtbenchError as exc:
                log(f"{host}: not imported: {exc}")
                ok = False
            st = fleet.hosts[host]
            st.timings["gather_s"] = round(time.monotonic() - t1, 3)
            span = run_span(fleet.db(host), st.run_id)
            if span is not None:
                st.timings["campaign_s"] = round(span, 3)
    finally:
        dst.close()
        fleet.timed("gather_s", time.monotonic() - t0)
        fleet.save()
    if not ok:
        _later(fleet, kept, log)
    return ok


def run_span(db: Path, run_id: str | None) -> float | None:
    """Seconds from the run's start to its end (or its last finished cell) in a host's
    store: the campaign's own time there, without the fleet's."""
    if not run_id:
        return None
    try:
        con = readonly.connect(db)
        try:
            row = con.execute(
                "SELECT r.started_at, COALESCE(r.finished_at, MAX(c.finished_at)) FROM runs r"
                " LEFT JOIN cells c ON c.run_id = r.run_id WHERE r.run_id = ?",
                (run_id,),
            ).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    if not row or row[0] is None or row[1] is None:
        return None
    return float(row[1]) - float(row[0])


def _later(fleet: Fleet, hosts: list[str], log: Callable[[str], None]) -> None:
    files = " ".join(str(fleet.db(h)) for h in hosts)
    log(f"the host stores are kept; import them when the store is back: virtbench import {files}"
        " --store URL")  # fmt: skip
