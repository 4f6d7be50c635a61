"""Checks across a run's samples, after its cells: their verdicts go into the store before any
report reads it, so every reader (report, scores, export, compare) sees the same invalid flags.
"""

from __future__ import annotations

import json

from ..analysis import platform_facts, plausibility
from ..store.db import Store


def flag_implausible(store: Store, run_id: str) -> dict[int, str]:
    """Flag O_DIRECT figures that are not disk figures (analysis/plausibility.py: by
    mechanism, above the disk ceiling in the run's host facts, or above native where the run
    has none); returns what was flagged. Idempotent: flagged samples are no longer
    candidates."""
    host = json.loads(store.run(run_id).get("host_json") or "{}")
    found = plausibility.implausible(
        store.sample_rows(run_id),
        store.description(run_id),
        plausibility.ceilings(host),
        platform_facts.host_device(host),
    )
    if found:
        store.invalidate(found)
    return found
