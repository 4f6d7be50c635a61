"""What is read back from a store is what virtbench writes, or a DamagedStore naming the
store and the row: a store edited by hand, damaged, or another version's import must not
reach analysis as a traceback (a text where a number belongs, JSON that does not parse).

Checks run where rows leave the store (db.Store's readers), once per distinct text: a run's
samples repeat a few label texts (db._dicts shares them), so the cost is one parse each.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from ..parsing import printable
from .backend import DamagedStore

# the JSON columns of each table, as they leave the store
RUN_JSON = ("host_json", "settings_json")
CELL_JSON = ("labels_json", "platform_json")
SAMPLE_JSON = ("labels_json", "cell_labels")


def json_text(where: str, what: str, text: Any) -> None:
    """`text` (a JSON column's value) is NULL or a JSON object, else DamagedStore."""
    if text is None:
        return
    try:
        ok = isinstance(json.loads(text), dict)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        shown = printable(repr(text)[:80])
        raise DamagedStore(
            f"results store {where} is damaged: {what} is {shown}, not a JSON object"
        )


def run_row(where: str, row: dict[str, Any]) -> None:
    for col in RUN_JSON:
        json_text(where, f"run {printable(str(row.get('run_id')))} {col}", row.get(col))


def cell_rows(where: str, rows: Iterable[Any]) -> None:
    seen: set[Any] = set()
    for r in rows:
        for col in CELL_JSON:
            text = getattr(r, col)
            if text not in seen:
                json_text(where, f"cell {printable(str(r.cell_id))} {col}", text)
                seen.add(text)


def number(value: Any) -> bool:
    """A REAL or INTEGER as virtbench stores it (not a text, a blob or a bool)."""
    return type(value) in (int, float)


def sample_rows(where: str, rows: list[dict[str, Any]]) -> None:
    """Each sample's value is a number, finite unless the sample is invalid (a non-finite
    value is stored invalid: finish_cell), and its label texts parse."""
    seen: set[Any] = set()
    for r in rows:
        value = r.get("value")
        if not number(value) or (r.get("valid", 1) and not math.isfinite(value)):
            raise DamagedStore(
                f"results store {where} is damaged: sample {r.get('sample_id')} (cell"
                f" {printable(str(r.get('cell_id')))}, metric {printable(str(r.get('metric')))})"
                f" has value {printable(repr(value)[:80])}, not a finite number"
            )
        for col in SAMPLE_JSON:
            text = r.get(col)
            if col in r and text not in seen:
                json_text(where, f"sample {r.get('sample_id')} {col}", text)
                seen.add(text)


def series_rows(where: str, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if not (number(r.get("t")) and number(r.get("value"))):
            raise DamagedStore(
                f"results store {where} is damaged: a series point of cell"
                f" {printable(str(r.get('cell_id')))} has t={printable(repr(r.get('t'))[:40])},"
                f" value={printable(repr(r.get('value'))[:40])}, not numbers"
            )
