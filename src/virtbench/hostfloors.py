"""The A/A floors `virtbench calibrate --aa` measured on this host, kept between runs
(statedir "aa") and copied into every later run's host facts (analysis/floors.py reads
them from there: a stored run says which calibration judged it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import statedir

FILE = "floors.json"
MAX_AGE_S = 30 * 24 * 3600  # a month: kernels, firmware and neighbours change


def path() -> Path:
    return statedir.safe_dir(statedir.root("aa"), "A/A floor state") / FILE


def load() -> dict[str, Any] | None:
    """The last calibration's host fact, or None (none, unreadable, not of this shape)."""
    fact = statedir.read_json(path())
    if not isinstance(fact, dict) or not isinstance(fact.get("floors"), list):
        return None
    return fact


def save(fact: dict[str, Any]) -> Path:
    return statedir.write_json(path(), fact, "aa-floors")
