"""Runs on a fleet host (shipped with the project, started by poll.yml over SSH): prints, as
one JSON line, what the host's store says of this fleet's run, and leaves a consistent copy
of the store (`snapshot.db`) for Ansible to fetch. Reads only: the runner owns the store."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from pathlib import Path

from ..runner.locks import run_holder
from ..runner.states import DONE
from ..store import readonly

STORE = "virtbench.db"
SNAPSHOT = "snapshot.db"
LOG = "run.log"
EXIT_CODE = "exit_code"  # written by the start task when `virtbench run` ends


def snapshot(db: Path, target: Path) -> None:
    """sqlite's online backup: a consistent copy even while the runner writes (WAL), read
    without leaving a -wal/-shm beside a store whose runner has ended (readonly.py)."""
    tmp = target.with_suffix(".tmp")
    # a snapshot killed mid-way leaves its side files: a stale WAL must never be replayed
    for leftover in ("", "-wal", "-shm", "-journal"):
        Path(f"{tmp}{leftover}").unlink(missing_ok=True)
    readonly.private_copy(db, tmp.parent, tmp.name)
    dst = sqlite3.connect(tmp)
    try:
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to fetch
    finally:
        dst.close()
    tmp.replace(target)


def _latest_run(db: Path) -> tuple[str, str] | None:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT run_id, status FROM runs ORDER BY started_at DESC").fetchone()
    finally:
        con.close()


def _cells(db: Path, run_id: str) -> list[str]:
    con = readonly.connect(db)
    try:
        return [s for (s,) in con.execute("SELECT status FROM cells WHERE run_id = ?", (run_id,))]
    finally:
        con.close()


def state(run_dir: Path, known_cells: int | None = None) -> dict:
    """`known_cells`: finished cells the controller already holds; while the run is alive
    and has finished no cell since, no snapshot is made (nothing new to fetch: the poll
    costs the measured host a query, not a copy of its store)."""
    # Order matters: whether a runner holds the run is asked first, the store copied next,
    # the exit status read last. A runner gone before the copy has left its last word in it
    # (finished, or still `running` if it was killed), and a clean exit is never mistaken
    # for a killed runner.
    results = run_dir / "results"
    db = results / STORE
    out: dict = {"snapshot": False, "run_id": None, "run_status": None, "alive": False}
    if db.exists():
        live = _latest_run(db)
        alive = live is not None and run_holder(results, live[0]) is not None
        if alive and known_cells is not None:
            assert live is not None
            statuses = _cells(db, live[0])
            done = sum(1 for s in statuses if s in DONE)
            if done == known_cells:
                same = _tails(run_dir, dict(out, run_id=live[0], run_status=live[1]))
                if "exit_code" not in same:  # ended meanwhile: its last word is fetched
                    same.update(alive=True, unchanged=True)
                    return same | {"cells_done": done, "cells_total": len(statuses)}
        snapshot(db, run_dir / SNAPSHOT)
        out["snapshot"] = True
        row = _latest_run(run_dir / SNAPSHOT)
        if row is not None:
            out["run_id"], out["run_status"] = row
            out["alive"] = alive and row[0] == live[0]
            con = sqlite3.connect(run_dir / SNAPSHOT)
            try:
                q = "SELECT status FROM cells WHERE run_id = ?"
                statuses = [s for (s,) in con.execute(q, row[:1])]
            finally:
                con.close()
            out["cells_done"] = sum(1 for s in statuses if s in DONE)
            out["cells_total"] = len(statuses)
    return _tails(run_dir, out)


def _tails(run_dir: Path, out: dict) -> dict:
    for name, key in ((LOG, "log_tail"), (EXIT_CODE, "exit_code")):
        with contextlib.suppress(OSError):
            out[key] = (run_dir / name).read_text(errors="replace")[-1500:].strip()
    if out.get("exit_code", "").isdigit():
        out["exit_code"] = int(out["exit_code"])
    else:
        out.pop("exit_code", None)  # still running, or killed with the host
    return out


def main() -> None:
    known = sys.argv[2] if len(sys.argv) > 2 else ""
    print(json.dumps(state(Path(sys.argv[1]), int(known) if known.isdigit() else None)))


if __name__ == "__main__":
    main()
