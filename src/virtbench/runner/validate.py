"""Checks across a run's samples, after its cells: their verdicts go into the store before any
report reads it, so every reader (report, scores, export, compare) sees the same invalid flags.
"""

from __future__ import annotations

from ..analysis import plausibility
from ..store.db import Store


def flag_implausible(store: Store, run_id: str) -> dict[int, str]:
    """Flag O_DIRECT figures that beat the host's own device (analysis/plausibility.py);
    returns what was flagged. Idempotent: flagged samples are no longer candidates."""
    found = plausibility.implausible(store.sample_rows(run_id), store.description(run_id))
    if found:
        store.invalidate(found)
    return found
