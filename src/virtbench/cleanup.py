"""Find and remove what virtbench left behind after a crash, by its own naming (NAME_PREFIX).

Each platform module registers a cleaner for the host objects it creates; a cleaner returns
a line per object it removed.
"""

from __future__ import annotations

from collections.abc import Callable

CLEANERS: list[tuple[str, Callable[[], list[str]]]] = []


def register(what: str):
    def deco(fn: Callable[[], list[str]]) -> Callable[[], list[str]]:
        CLEANERS.append((what, fn))
        return fn

    return deco


def run_all() -> list[str]:
    from .platforms import registry

    registry.load_all()  # platform modules register their cleaners on import
    removed: list[str] = []
    for what, fn in CLEANERS:
        try:
            removed.extend(fn())
        except Exception as exc:  # noqa: BLE001 - one cleaner failing must not stop the others
            removed.append(f"! {what}: {exc}")
    return removed
