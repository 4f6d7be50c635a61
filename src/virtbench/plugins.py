"""The one plug-in loader: import every module of a package, so that each registers itself.

Registration by import is virtbench's plug-in mechanism: platform types, scenario kinds,
workloads and report sections (and cleaners, through the platform modules) add themselves to
their registry with a decorator when their module is imported, so a new one is a new module
and no edit elsewhere. A registry calls `load` when first asked for its contents, never at
its own import: the plug-ins import the registry, and it must be complete before they do.
Plug-ins are found by package name here, so they are no arrows of the import graph.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Collection


def load(package: str, skip: Collection[str] = (), recursive: bool = True) -> None:
    """Import the modules of `package` (with `recursive`, those of its subpackages too), except
    those whose last name part is in `skip`."""
    pkg = importlib.import_module(package)
    walk = pkgutil.walk_packages if recursive else pkgutil.iter_modules
    for mod in walk(pkg.__path__, package + "."):
        if mod.name.rsplit(".", 1)[-1] not in skip:
            importlib.import_module(mod.name)
