"""Platform types by name. Modules register themselves; `load_all` imports them; `create`
makes the platform for a spec, picking the class of a type that runs inside another platform
(a container whose host is a VM)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import plugins
from ..errors import PlatformError

if TYPE_CHECKING:
    from ..cgroups import CpuBudget
    from .base import Platform, PlatformSpec

PLATFORMS: dict[str, type] = {}
STACKED: dict[str, type] = {}  # type name -> its class when it runs inside another platform


def register(cls: type) -> type:
    PLATFORMS[cls.kind] = cls
    return cls


def register_stacked(cls: type) -> type:
    STACKED[cls.kind] = cls
    return cls


def load_all() -> dict[str, type]:
    """Import every platform module in this package so each registers its type."""
    plugins.load("virtbench.platforms", skip={"base", "registry", "procs"})
    return PLATFORMS


def get(kind: str) -> type:
    load_all()
    if kind not in PLATFORMS:
        raise PlatformError(
            f"unknown platform type '{kind}'; allowed: {', '.join(sorted(PLATFORMS))}"
        )
    return PLATFORMS[kind]


def create(
    spec: PlatformSpec,
    instance: str,
    host: Platform | None = None,
    budget: CpuBudget | None = None,
) -> Platform:
    """The platform for `spec`, not yet provisioned; with a `host`, it runs inside it; with a
    shared CPU `budget` (cgroups/budget.py), its host-side processes run inside that."""
    cls = get(spec.type)
    if host is not None:
        cls = STACKED.get(spec.type, cls)  # a vm refuses a host when it provisions
        return cls(spec, instance, host=host)  # its host carries the budget
    return cls(spec, instance, budget=budget)
