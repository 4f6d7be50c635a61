"""Ceilings kept per device + filesystem + kernel (record.Key) in a directory only its
owner can read: /var/lib/virtbench/ceiling as root, ~/.cache/virtbench/ceiling otherwise,
VIRTBENCH_CEILING_DIR for tests. Root-safe: the directory must be a real directory owned by
us with no group/other access, a cache file is opened without following symlinks and must be
a regular file, and a new one is written beside it and renamed over it."""

from __future__ import annotations

import os
from pathlib import Path

from .. import statedir
from ..diskceiling import MAX_AGE_S, Ceiling, Key
from ..errors import VirtbenchError

ENV = "VIRTBENCH_CEILING_DIR"


class CeilingError(VirtbenchError):
    """No ceiling could be had (unsafe cache directory, fio failed or refused O_DIRECT)."""


def root() -> Path:
    if override := os.environ.get(ENV):
        return Path(override)
    return statedir.root("ceiling")


def safe_dir(d: Path | None = None) -> Path:
    try:
        return statedir.safe_dir(d or root(), "disk ceiling cache", ENV)
    except statedir.StateError as exc:
        raise CeilingError(str(exc)) from None


def path_of(key: Key, d: Path) -> Path:
    return d / f"{key.digest}.json"


def load(key: Key, d: Path | None = None) -> Ceiling | None:
    """The cached ceiling of `key`, or None (absent, unreadable, not a regular file, or of
    another key)."""
    fact = statedir.read_json(path_of(key, safe_dir(d)))
    if fact is None:
        return None
    try:
        ceiling = Ceiling.from_fact(fact)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return ceiling if ceiling.key == key else None


def fresh(ceiling: Ceiling | None, max_age_s: float = MAX_AGE_S) -> bool:
    return ceiling is not None and 0 <= ceiling.age_s() <= max_age_s


def save(ceiling: Ceiling, d: Path | None = None) -> Path:
    try:
        return statedir.write_json(path_of(ceiling.key, safe_dir(d)), ceiling.to_fact(), "ceiling")
    except statedir.StateError as exc:
        raise CeilingError(str(exc)) from None
