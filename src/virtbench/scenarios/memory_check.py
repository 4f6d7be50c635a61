"""Will the neighbour environments fit in memory? Answered before anything starts.

Each environment's need is its platform option `memory_mib`/`memory_mb`/... (else the platform
schema's default, else a rough size per type); a stacked platform adds its host's. The sum
must fit in MemAvailable minus a reserve for the host, the clients and other work.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from ..errors import VirtbenchError
from ..platforms.base import PlatformSpec

# Rough memory each environment needs when its spec does not say (MiB).
DEFAULT_MIB = {"native": 16, "container": 64, "vm": 512}
# What a platform needs beyond the memory its options give the guest: a TCG QEMU process with
# a 256 MiB guest whose RAM was all touched had 495 MiB RSS: the guest RAM, 57 MiB of the
# directly booted kernel image, 112 MiB of translated code (TCG's buffer may grow to 1 GiB),
# ~70 MiB QEMU itself (docs/colocation.md)
OVERHEAD_MIB = {"vm": 256}
MEMORY_KEYS = ("memory_mib", "memory_mb", "mem_mib", "mem_mb", "memory")
RESERVE_MIB = 512  # left for the host, the clients and the other engineers' work


class _Planned(Protocol):
    role: str
    spec: PlatformSpec | None  # None: the runner's target, already running


def spec_mib(spec: PlatformSpec) -> int:
    from ..platforms import registry

    cls = registry.load_all().get(spec.type)
    schema = {k: v[0] for k, v in cls.options_schema.items()} if cls else {}
    host = spec_mib(spec.host) if spec.host is not None else 0  # container@vm: its VM too
    for key in MEMORY_KEYS:
        value = spec.options.get(key, schema.get(key))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value) + OVERHEAD_MIB.get(spec.type, 0) + host
    return DEFAULT_MIB.get(spec.type, 64) + host


def mem_available_mib(meminfo: str | None = None) -> int:
    text = meminfo if meminfo is not None else Path("/proc/meminfo").read_text()
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise VirtbenchError("cannot read MemAvailable from /proc/meminfo")


def check_memory(plans: Iterable[_Planned], what: str, meminfo: str | None = None) -> None:
    """Refuse before starting anything if the neighbours cannot fit in memory."""
    new = [(p.role, p.spec) for p in plans if p.spec is not None]
    need = sum(spec_mib(spec) for _, spec in new)
    have = mem_available_mib(meminfo) - RESERVE_MIB
    if need > have:
        per = ", ".join(f"{role} {spec.name} ~{spec_mib(spec)} MiB" for role, spec in new)
        raise VirtbenchError(
            f"scenario '{what}': {len(new)} neighbour environments need about {need} MiB "
            f"({per}) but only {have} MiB are available (MemAvailable minus {RESERVE_MIB} MiB "
            "reserve); use fewer neighbours or smaller ones (platform option memory_mib)"
        )
