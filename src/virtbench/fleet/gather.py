"""Every host's results in one store: each fetched host store (RESULTS/fleet/<id>/HOST.db,
kept as it is) is imported into the fleet's store (`--store`, else RESULTS_DIR/virtbench.db).
Importing is idempotent: a run already there only gains the cells it finished since, so a
lost host imported now and again after `fleet resume` ends up once, complete."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..errors import VirtbenchError
from ..store import importer
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
            try:
                for r in importer.import_file(fleet.db(host), dst, lambda _line: None):
                    log(f"{host}: {r.line(str(dst.path))}")
            except VirtbenchError as exc:
                log(f"{host}: not imported: {exc}")
                ok = False
    finally:
        dst.close()
        fleet.timed("gather_s", time.monotonic() - t0)
        fleet.save()
    if not ok:
        _later(fleet, kept, log)
    return ok


def _later(fleet: Fleet, hosts: list[str], log: Callable[[str], None]) -> None:
    files = " ".join(str(fleet.db(h)) for h in hosts)
    log(f"the host stores are kept; import them when the store is back: virtbench import {files}"
        " --store URL")  # fmt: skip
