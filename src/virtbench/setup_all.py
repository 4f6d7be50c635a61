"""`virtbench setup`'s build steps: load every module that registers one, run them.

Top level, apart from the step registry (`setup_host.py`, host plumbing) so that a module
with a build step (platforms, workloads, the image and probe builds) never imports the
registries that load it.
"""

from __future__ import annotations

from collections.abc import Callable

from . import setup_host
from .platforms import registry as platform_registry
from .workloads import registry as workload_registry


def run_steps(log: Callable[[str], None], only: set[str] | None = None) -> None:
    """Run every registered step that is not opt-in, or only those named in `only`."""
    platform_registry.load_all()
    workload_registry.load_all()  # modules register their build steps on import
    for name, fn in setup_host.STEPS:
        if (only is None and name not in setup_host.OPT_IN) or (only is not None and name in only):
            log(f"setup step: {name}")
            fn(log)
