"""A run's shared store with a local way out: if the PostgreSQL store goes away mid-run, the
run goes on into a SQLite file in the results directory (`fallback-RUN.db`), seeded with the
run, its description and its cells, and says how to `virtbench import` it once the store is
back. The cell whose commit failed is committed there: nothing measured is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .backend import StoreUnavailable
from .db import Store

MEASURED = ("samples", "series")  # what the store already holds is not kept in memory


class FallbackStore:
    """Calls go to the shared store until it fails, then to the local file. The run is
    remembered (its rows without samples) when it is created or resolved for a resume."""

    def __init__(self, primary: Store, results_dir: Path, warn: Callable[[str], None]) -> None:
        self.primary = self.current = primary
        self.results_dir = Path(results_dir)
        self.warn = warn
        self.run_id: str | None = None
        self.seed: dict[str, list[dict[str, Any]]] = {}  # table -> the run's rows
        self.note: str | None = None  # set once the run went on locally: how to import it

    def _remember(self, run_id: str) -> None:
        self.run_id = run_id
        self.seed = {
            t: self.primary.rows(t, run_id) for t in self.primary.run_tables() if t not in MEASURED
        }

    def create_run(self, run_id: str, *args: Any, **kwargs: Any) -> None:
        self.primary.create_run(run_id, *args, **kwargs)  # nothing to keep if this fails
        self._remember(run_id)

    def resolve_run(self, run: str) -> str:
        run_id = self.current.resolve_run(run)
        if self.current is self.primary:
            self._remember(run_id)
        return run_id

    def add_cells(self, rows: Any) -> None:
        rows = list(rows)
        self._call("add_cells", rows)
        if self.current is self.primary and self.run_id is not None:
            self.seed["cells"] = self.primary.rows("cells", self.run_id)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.current, name)
        if not callable(attr) or self.current is not self.primary:
            return attr
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.current, name)(*args, **kwargs)
        except StoreUnavailable as exc:
            if self.current is not self.primary or self.run_id is None:
                raise
            self._go_local(exc)
            return getattr(self.current, name)(*args, **kwargs)

    def _go_local(self, exc: StoreUnavailable) -> None:
        path = self.results_dir / f"fallback-{self.run_id}.db"
        local = Store(path)
        if not local.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (self.run_id,)).fetchone():
            with local.tx() as c:
                for table, rows in self.seed.items():
                    Store.insert_rows(c, table, rows)
        self.current = local
        self.note = (
            f"{self.run_id}: the results store {self.primary.path} went away; the run's cells"
            f" from then on are in {path}. Nothing measured is lost. When the store is back:"
            f" virtbench import {path} --store '{self.primary.path}'"
        )
        if "***" in str(self.primary.path):
            self.note += " (your password in place of ***)"
        self.warn(f"{exc}. The run goes on; its cells are kept in {path}")
