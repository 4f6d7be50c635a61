"""The results export contract (docs/export.md): one record per sample, fixed column names.

JSON Lines carries every label in `labels`; the tables (csv, tsv, md) add one column per
dimension label of the run (block_size_bytes, direct, threads ...) after the contract's
columns, so a spreadsheet can filter on them without parsing JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from . import labelkeys
from .analysis import groups
from .store.db import Store

# The contract's columns, in order; users' scripts read these names. Extra columns follow.
CONTRACT = (
    "run_id",
    "cell_id",
    "platform",
    "suite",
    "test_case",
    "scenario",
    "role",
    "repetition",
    "metric",
    "value",
    "unit",
    "higher_is_better",
)
EXTRA = ("valid", "invalid_reason", "labels")


def records(store: Store, run_id: str) -> Iterator[dict[str, Any]]:
    for row in store.sample_rows(run_id):
        rec = {k: row[k] for k in CONTRACT}
        rec["higher_is_better"] = bool(rec["higher_is_better"])
        rec["valid"] = bool(row["valid"])
        rec["invalid_reason"] = row["invalid_reason"]
        labels = json.loads(row["labels_json"] or "{}")
        cell = json.loads(row["cell_labels"] or "{}")
        accel = cell.get("platform", {}).get("accel_used")
        if accel:
            labels.setdefault(labelkeys.ACCEL, accel)
        if cell.get("warmup"):  # measured after a failed warm-up (runner/run.py)
            labels.setdefault(labelkeys.WARMUP, cell["warmup"])
        rec["labels"] = labels
        yield rec


def to_jsonl(store: Store, run_id: str) -> str:
    return "".join(json.dumps(r, default=str) + "\n" for r in records(store, run_id))


def to_json(store: Store, run_id: str) -> str:
    """One JSON array of the JSON Lines records."""
    return json.dumps(list(records(store, run_id)), default=str, indent=1) + "\n"


def dimension_columns(store: Store, run_id: str) -> list[str]:
    """The labels that tell a run's results apart (analysis' rule: declared by the run's
    description and varying, or varying within a cell), sorted: one table column each."""
    keys = groups.dimension_keys(store.sample_rows(run_id), store.description(run_id))
    return sorted(set().union(*keys.values()) - {*CONTRACT, *EXTRA})


def _label_text(value: Any) -> str:
    """A label value in a table cell: strings as they are, the rest as JSON (true, 4096)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def table_rows(store: Store, run_id: str) -> tuple[list[str], Iterator[list[str]]]:
    """Header and rows of the tabular formats: CONTRACT, EXTRA, then the dimensions."""
    dims = dimension_columns(store, run_id)

    def rows() -> Iterator[list[str]]:
        for r in records(store, run_id):
            labels = r["labels"]
            r["labels"] = json.dumps(labels, default=str, sort_keys=True)
            # the contract's own spelling of each value (csv.writer's str(): True, 1224.31)
            yield [_field(r[c]) for c in (*CONTRACT, *EXTRA)] + [
                _label_text(labels.get(d)) for d in dims
            ]

    return [*CONTRACT, *EXTRA, *dims], rows()


def _field(value: Any) -> str:
    return "" if value is None else str(value)


def to_csv(store: Store, run_id: str, delimiter: str = ",") -> str:
    header, rows = table_rows(store, run_id)
    buf = io.StringIO()
    if delimiter == "\t":  # TSV: no quoting; a tab or newline inside a value becomes a space
        for line in [header, *rows]:
            buf.write("\t".join(c.replace("\t", " ").replace("\n", " ") for c in line) + "\n")
        return buf.getvalue()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def to_tsv(store: Store, run_id: str) -> str:
    return to_csv(store, run_id, "\t")
