"""What a run's platforms said about themselves, read from its host facts.

At a run's start the runner asks each platform type its capabilities that analysis needs
(platforms/capabilities.py `RuntimeTools`, `HostDevice`, `IsolationModes`;
runner/describe.platform_facts) and
stores the answers in the host facts under PLATFORMS, so analysis and report never ask a
platform's type. A run stored before that (or a platform it does not list) is read the way
the code of its time read it: from the stored spec and platform label (`_stored_before`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import labelkeys

PLATFORMS = "platforms"  # host fact: platform name -> {RUNTIME_TOOLS: [...], HOST_DEVICE: bool}
RUNTIME_TOOLS = "runtime_tools"  # the host executables it runs on (an OCI runtime, QEMU)
HOST_DEVICE = "host_device"  # its O_DIRECT figures are the host device's own
MODES = "mode_defaults"  # its isolation-mode options' defaults (a container), else null

# runs stored before PLATFORMS: the platform types as that code knew them
_NATIVE, _CONTAINER, _VM = "native", "container", "vm"
_QEMU = "qemu-system-x86_64"
_CONTAINER_MODES = {"runtime": "crun", "storage": "overlay", "network": "host"}


def _declared(host: dict[str, Any], name: str | None) -> dict[str, Any] | None:
    facts = host.get(PLATFORMS)
    if not isinstance(facts, dict) or name is None:
        return None
    mine = facts.get(name)
    return mine if isinstance(mine, dict) else None


def runtime_tools(host: dict[str, Any], spec: dict[str, Any]) -> set[str]:
    """The runtime a stored platform spec ran on (an OCI runtime, QEMU for a VM or for the
    VM a container is stacked on)."""
    if (mine := _declared(host, spec.get("name"))) is not None:
        return set(mine.get(RUNTIME_TOOLS) or ())
    return _stored_before_tools(spec)


def host_device(host: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """Whether a sample row's platform reaches the host's device with nothing between."""

    def of(row: dict[str, Any]) -> bool:
        if (mine := _declared(host, row.get("platform"))) is not None:
            return bool(mine.get(HOST_DEVICE))
        cell = json.loads(row.get("cell_labels") or "{}")
        platform = cell.get(labelkeys.PLATFORM) or {}
        return platform.get(labelkeys.PLATFORM_TYPE) == _NATIVE

    return of


def mode_defaults(host: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
    """The defaults of a stored platform spec's isolation-mode options (runtime, storage,
    network), None for a type without such modes (container_modes.py compares them)."""
    mine = _declared(host, spec.get("name"))
    if mine is not None and MODES in mine:  # a run stored before MODES lacks the key
        modes = mine[MODES]
        return dict(modes) if isinstance(modes, dict) else None
    return dict(_CONTAINER_MODES) if spec.get("type") == _CONTAINER else None


def _stored_before_tools(spec: dict[str, Any]) -> set[str]:
    kind = spec.get("type")
    opts = spec.get("options") or {}
    out: set[str] = set()
    if kind == _CONTAINER:
        runtime = opts.get("runtime") or "crun"
        out |= {"podman", "crun"} if runtime == "podman" else {runtime}
    if kind == _VM or spec.get("host"):
        out.add(_QEMU)
    return out
