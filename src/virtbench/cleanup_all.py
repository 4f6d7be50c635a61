"""`virtbench cleanup` and the watchdog: load every module that registers a cleaner, run them.

Top level, apart from the registry (`cleanup.py`, bottom level) so that what registers a
cleaner never imports the packages that register theirs: platform modules, scenario helpers
that change host settings (quantum), `tune`'s restorer, the runner's host registrations.
"""

from __future__ import annotations

from . import cleanup, tune  # noqa: F401 - tune registers its restorer on import
from .platforms import registry as platform_registry
from .runner import locks  # noqa: F401 - registers the stale host run registrations' cleaner
from .scenarios import registry as scenario_registry


def run_all() -> list[str]:
    """Run every cleaner; a line per object removed or left alone, `! what: error` per cleaner
    that failed (one failing must not stop the others)."""
    platform_registry.load_all()  # platform modules register their cleaners on import
    scenario_registry.load_all()  # so do scenario helpers that change host settings
    removed: list[str] = []
    for what, fn in cleanup.CLEANERS:
        try:
            removed.extend(fn())
        except Exception as exc:  # noqa: BLE001 - one cleaner failing must not stop the others
            removed.append(f"! {what}: {exc}")
    cleanup.drop_dead_claims()  # last: every cleaner above judged its objects by them
    return removed
