"""Whether an O_DIRECT figure can be a device figure, by mechanism: the label a platform's
disk samples carry and the one rule that reads it (ground level: the disk workload flags
with it as it measures, analysis/plausibility.py after the run, for samples stored valid).

A platform knows how its workdir's data reaches the host device; `Platform.direct_io()`
says so as `HONOURED` or `cached(why)`. Figures measured where O_DIRECT is cached are not
disk figures, whatever their size: a cache is as fast as the memory it lives in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import labelkeys

HONOURED = "honoured"
_CACHED = "cached:"


def cached(why: str) -> str:
    """The label of a configuration whose O_DIRECT is served from a cache, and why."""
    return _CACHED + why


def why_cached(value: Any) -> str | None:
    """The mechanism of a `cached(...)` label value; None when honoured or unlabelled."""
    if isinstance(value, str) and value.startswith(_CACHED):
        return value[len(_CACHED) :]
    return None


def is_direct(labels: Mapping[str, Any]) -> bool:
    return labels.get(labelkeys.DIRECT) in (1, True)


def invalid_reason(labels: Mapping[str, Any]) -> str | None:
    """Why an O_DIRECT sample is not a device figure by mechanism, or None."""
    if not is_direct(labels):
        return None
    why = why_cached(labels.get(labelkeys.DIRECT_IO))
    return None if why is None else f"O_DIRECT not honoured: {why}; not a disk figure"
