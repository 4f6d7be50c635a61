"""The results export contract (DESIGN.md): one record per sample, fixed column names."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

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
            labels.setdefault("accel", accel)
        if cell.get("warmup"):  # measured after a failed warm-up (runner/run.py)
            labels.setdefault("warmup", cell["warmup"])
        rec["labels"] = labels
        yield rec


def to_jsonl(store: Store, run_id: str) -> str:
    return "".join(json.dumps(r, default=str) + "\n" for r in records(store, run_id))


def to_csv(store: Store, run_id: str) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*CONTRACT, *EXTRA], lineterminator="\n")
    writer.writeheader()
    for r in records(store, run_id):
        r["labels"] = json.dumps(r["labels"], default=str, sort_keys=True)
        writer.writerow(r)
    return buf.getvalue()
