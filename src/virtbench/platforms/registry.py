"""Platform types by name. Modules register themselves; `load_all` imports them."""

from __future__ import annotations

import importlib
import pkgutil

from ..errors import PlatformError

PLATFORMS: dict[str, type] = {}


def register(cls: type) -> type:
    PLATFORMS[cls.kind] = cls
    return cls


def load_all() -> dict[str, type]:
    """Import every platform module in this package so each registers its type."""
    from .. import platforms as pkg

    for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if mod.name.rsplit(".", 1)[-1] not in {"base", "registry", "procs"}:
            importlib.import_module(mod.name)
    return PLATFORMS


def get(kind: str) -> type:
    load_all()
    if kind not in PLATFORMS:
        raise PlatformError(
            f"unknown platform type '{kind}'; allowed: {', '.join(sorted(PLATFORMS))}"
        )
    return PLATFORMS[kind]
