"""A fresh ceiling for each device holding the given directories: from the cache when one
of the same device, filesystem and kernel is younger than MAX_AGE_S, else measured now and
cached. Never fails a run: what could not be had is a note (stored with the host facts)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..diskceiling import MAX_AGE_S, Ceiling
from ..errors import VirtbenchError
from . import cache, measure


def ensure(
    directories: Iterable[str],
    say: Callable[[str], None],
    refresh: bool = False,
    max_age_s: float = MAX_AGE_S,
    passes: int = measure.PASSES,
    runtime_s: int = measure.RUNTIME_S,
) -> tuple[list[Ceiling], list[str]]:
    """(ceilings, notes); `refresh` measures even where a fresh one is cached."""
    ceilings: list[Ceiling] = []
    notes: list[str] = []
    seen = set()
    for d in directories:
        try:
            key = measure.key_of(d)
            if key in seen:
                continue
            seen.add(key)
            cached = None if refresh else cache.load(key)
            if cache.fresh(cached, max_age_s):
                assert cached is not None
                say(f"disk ceiling of {key.source} ({key.fs_type}): measured {cached.date}")
                ceilings.append(cached)
                continue
            why = "refresh asked" if refresh else ("stale" if cached else "none cached")
            say(
                f"measuring the disk ceiling of {key.source} ({key.fs_type}, {d}; {why}):"
                f" native fio O_DIRECT at iodepth {measure.IODEPTH}, about"
                f" {measure.seconds(passes, runtime_s)} s"
            )
            ceiling = measure.measure(d, passes, runtime_s, say=say)
            cache.save(ceiling)
            ceilings.append(ceiling)
        except (VirtbenchError, OSError) as exc:  # fio missing or failing, unsafe cache
            notes.append(f"{d}: no disk ceiling: {exc}")
            say(notes[-1])
    return ceilings, notes
