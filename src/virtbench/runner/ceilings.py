"""The disk ceiling a run's O_DIRECT figures are judged against (ceiling/): found or
measured once at the start of a run that has O_DIRECT disk cells, on the devices holding
its platforms' workdir data, and kept in the run's host facts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import diskceiling, suites
from ..campaign.model import Cell
from ..ceiling.ensure import ensure
from ..platforms import registry
from ..platforms.base import PlatformSpec

FALLBACK_DIR = "/var/tmp"  # a platform that cannot say where its data lives


def has_direct_io(cells: Iterable[Cell]) -> bool:
    """Whether any cell runs fio with O_DIRECT (the disk suite's `direct` parameter)."""
    for c in cells:
        direct = c.params.get("direct")
        modes = direct if isinstance(direct, list) else [direct]
        if c.suite == suites.DISK and any(m == 1 and m is not True for m in modes):
            return True
    return False


def data_dirs(specs: Iterable[PlatformSpec]) -> list[str]:
    """Host directories holding the platforms' workdir data, in order, once each; a stacked
    platform's data lives in its host's."""
    out: list[str] = []
    for spec in specs:
        while spec.host is not None:
            spec = spec.host
        d = registry.get(spec.type).host_data_dir(spec) or FALLBACK_DIR
        if d not in out:
            out.append(d)
    return out


def default_dirs() -> list[str]:
    """Where every platform type keeps its data with default options (`calibrate --disk`)."""
    return data_dirs(PlatformSpec(kind, kind) for kind in sorted(registry.load_all()))


def facts(cells: list[Cell], say: Callable[[str], None]) -> dict[str, Any]:
    """Host facts of the run's ceilings ({} when it has no O_DIRECT cell)."""
    if not has_direct_io(cells):
        return {}
    specs = {c.platform.name: c.platform for c in cells if c.suite == suites.DISK}
    ceilings, notes = ensure(data_dirs(specs.values()), say)
    out: dict[str, Any] = {diskceiling.FACT: [c.to_fact() for c in ceilings]}
    if notes:
        out[diskceiling.NOTES] = notes
    return out
