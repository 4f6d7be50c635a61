"""`virtbench doctor`'s checks, registered where the knowledge is.

Like cleaners (cleanup.py), each platform or engine module registers the checks of what it
needs from the host (KVM, gVisor's network, LXC, Docker); doctor.py adds the host-wide ones
and runs them all. Ground level (imports nothing of virtbench), so a platform module can
register without importing doctor and what doctor imports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Check:
    name: str
    status: str  # ok | warn | missing
    detail: str
    fix: str = ""


# A check returns its Check, or None when it has nothing to say on this host.
CheckFn = Callable[[], "Check | None"]


@dataclass(frozen=True)
class Registered:
    order: int  # where its line goes among doctor's (host-wide ones first, tools last)
    fn: CheckFn
    needs_root: bool  # probes only root can make (runsc, a dockerd socket): skipped otherwise


CHECKS: list[Registered] = []


def register(order: int, needs_root: bool = False) -> Callable[[CheckFn], CheckFn]:
    def deco(fn: CheckFn) -> CheckFn:
        CHECKS.append(Registered(order, fn, needs_root))
        return fn

    return deco
