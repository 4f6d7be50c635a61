"""Sample rows' labels parsed once, equal values shared: read them, never change them.

A co-location run stores many samples whose labels repeat: a sweep step's dozen metrics
carry the same text (the environment's parameters with its lockstep schedule, its solo peaks
and their cells), and every sample of an environment in a cell the same nested values.
Parsed one dict per row, they were most of a report's memory (docs/code-measurements.md,
bench/README.md).
"""

from __future__ import annotations

import json
from typing import Any


def parse_labels(rows: list[dict[str, Any]]) -> None:
    """Give each row its parsed `labels`: one dict per distinct text, shared by the rows
    that carry it, whose nested values (dicts, lists) and texts are shared with every other
    dict's equal ones."""
    shared = _Shared()
    parsed: dict[str, dict[str, Any]] = {}
    for row in rows:
        text = row.get("labels_json") or "{}"
        labels = parsed.get(text)
        if labels is None:
            labels = parsed[text] = shared.labels(json.loads(text))
        row["labels"] = labels


class _Shared:
    """The first of each set of equal texts and nested values seen."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        # a dict or list by its JSON text, which tells apart what Python's == does not
        # (1, 1.0 and true; 0.0 and -0.0; key order): only values parsed alike are one
        self.values: dict[str, Any] = {}

    def labels(self, parsed: dict[str, Any]) -> dict[str, Any]:
        return {self.text(k): self.value(v) for k, v in parsed.items()}

    def text(self, text: str) -> str:
        return self.texts.setdefault(text, text)

    def value(self, value: Any) -> Any:
        if type(value) is str:
            return self.text(value)
        if type(value) is dict or type(value) is list:
            return self.values.setdefault(json.dumps(value), value)
        return value
