"""What really happened to a run: a run or cell still marked `running` whose runner is gone
(killed, crashed, host rebooted) is `lost`, stamped with the time it was found so."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from ..errors import VirtbenchError
from ..store.db import Store
from .locks import run_holder

DONE = ("ok", "failed", "timeout")  # cells a resume does not run again
LOST = "lost"
INTERRUPTED = "interrupted"


def settle_lost(store: Store, results_dir: Path, run_ids: list[str] | None = None) -> None:
    """Mark runs (all with something `running`, or `run_ids`) that no live runner holds, and
    their running cells, `lost`. Read-only stores are left as they are."""
    stale = store.runs_with_running()
    for run_id in stale if run_ids is None else [r for r in run_ids if r in stale]:
        if run_holder(results_dir, run_id) is not None or _elsewhere(store, run_id):
            continue
        try:
            store.settle_cells(run_id, "running", LOST)
            if store.run(run_id)["status"] == "running":
                store.set_run_status(run_id, LOST)
        except VirtbenchError:
            pass  # e.g. a store we may only read: the listing still says what it knows


def _elsewhere(store: Store, run_id: str) -> bool:
    """A run another host runs in a shared store: its runner's lock is not here to probe."""
    if not store.shared:
        return False
    host = json.loads(store.run(run_id).get("host_json") or "{}")
    return host.get("hostname") != platform.node()


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def incomplete(store: Store, results_dir: Path, run_id: str) -> str | None:
    """One line saying why a run is not complete, None if it finished every cell."""
    run = store.run(run_id)
    cells = store.cells(run_id)
    done = sum(1 for c in cells if c.status in DONE)
    status = run["status"]
    if status == "finished" and done == len(cells):
        return None
    progress = f"{done} of {len(cells)} cells finished"
    if status == "running" and _elsewhere(store, run_id):
        host = json.loads(run.get("host_json") or "{}").get("hostname", "another host")
        return f"run {run_id} is running on {host} (shared store): {progress} so far"
    if status == "running":
        pid = run_holder(results_dir, run_id)
        return f"run {run_id} is still running (pid {pid}): {progress} so far"
    since = f" at {when(run['finished_at'])}" if status in (LOST, INTERRUPTED) else ""
    found = " (found so: its runner is gone)" if status == LOST else ""
    return (
        f"run {run_id} is incomplete: {status}{since}{found}, {progress};"
        f" continue with: virtbench run --resume {run_id}"
    )
