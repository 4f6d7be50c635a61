"""What a platform can do beyond the base contract, for scenarios and workloads to ask for.

Each capability is a small `typing.Protocol`: a platform has it by having the methods, so
native, container, vm and container@vm each take what applies to them without a class
hierarchy of mixins (platforms stack, and a stacked container may pass a capability on from
its host). Scenarios and workloads test `isinstance(platform, CpuWeight)` or call `require`,
never a platform's kind or internals.

| capability     | who                          | used by                                  |
|----------------|------------------------------|------------------------------------------|
| CpuWeight      | native, container, vm, c@vm  | scenarios/weights.py                     |
| RtBudget       | container                    | scenarios/rt_budget.py                   |
| ColdStart      | container                    | workloads/lifecycle.py                   |
| FreshBoot      | vm                           | workloads/vm_lifecycle.py                |
| DiskImages     | vm                           | workloads/vm_lifecycle.py                |
| BackendThreads | vm, c@vm (its VM's)          | scenarios/weights.py (host weight)       |
| VcpuThreads    | vm                           | scenarios/antagonist.py (RR quantum)     |
| RuntimeTools   | container, vm (type-level)   | runner/describe.py -> analysis, report   |
| HostDevice     | native (type-level)          | runner/describe.py -> plausibility       |
| HostTools      | native (type-level)          | runner/run.py (preflight)                |
| IsolationModes | container (type-level)       | runner/describe.py -> container modes    |

The type-level ones are asked of a platform type before anything is provisioned, by
`runner/describe.platform_facts`, which stores the answers with the run (host fact
`platforms`): analysis and report read them there, never the platform's type. HostTools is
asked by the runner's preflight, before anything is provisioned.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import PlatformError
from .base import ExecResult


@runtime_checkable
class CpuWeight(Protocol):
    """A relative CPU weight for the environment (cpu.shares scale 2..262144, default 1024)."""

    def cpu_weight(self, shares: int) -> AbstractContextManager[str]:
        """Set the weight while the block runs, then restore what was there; the block gets
        what was set where, for the cell's labels (e.g. 'cpu.shares=256 on its own cgroup
        /sys/fs/cgroup/cpu/virtbench/vb-1234')."""
        ...


@runtime_checkable
class RtBudget(Protocol):
    """The environment holds its own share of the host's real-time budget (cgroup v1 with RT
    group scheduling); its default grant is everything free when it is provisioned."""

    def rt_budget(self) -> tuple[int, int] | None:
        """(runtime µs, period µs) held; None where not applicable."""
        ...

    def set_rt_budget(
        self, runtime_us: int, period_us: int | None = None, cap_to_free: bool = False
    ) -> int | None:
        """Lower or raise the running environment's budget; returns the runtime granted."""
        ...


@dataclass
class StartupTiming:
    """One fresh instance: create -> init runs -> exits -> torn down (wall clock, seconds)."""

    created_at: float  # time.time() just before anything of the instance existed
    result: ExecResult  # the run of the init command (its stdout is the workload's)
    exited_at: float  # time.time() when the init had exited
    prepare_s: float  # before the init starts (container: cgroup, overlay, network, config)
    teardown_s: float
    # time.time() just before the runtime's own create/run command: start-up from here on is
    # the isolation's cost, the time before it is virtbench's preparation (None: not known)
    runtime_at: float | None = None


@runtime_checkable
class ColdStart(Protocol):
    """Start a fresh sibling instance whose first process is argv, timing every phase."""

    def cold_start(self, argv: list[str], timeout: float | None = 60) -> StartupTiming: ...


@dataclass(frozen=True)
class BootPhases:
    """How a fresh instance booted: seconds from start to ready and to its control channel."""

    boot_s: float  # start -> the instance answers commands
    control_s: float  # start -> the platform's control channel answers (QEMU's QMP)
    labels: dict[str, Any]  # facts of this boot (accel_used, vcpus)


@runtime_checkable
class FreshBoot(Protocol):
    """Boot, time and shut down fresh siblings of the environment (same options)."""

    def fresh_sibling(self) -> FreshBoot:
        """A new, not yet provisioned instance with the same spec and its own name."""
        ...

    def provision(self) -> None: ...

    def teardown(self) -> None: ...

    def boot_phases(self) -> BootPhases:
        """Of the last provision()."""
        ...

    def shutdown(self, timeout: float = 30.0) -> float:
        """Graceful poweroff; seconds until the instance was gone."""
        ...


@runtime_checkable
class DiskImages(Protocol):
    """Create new instances' own root disks from the shared root tree, timed."""

    def disk_images(
        self, log: Callable[[str], None]
    ) -> AbstractContextManager[Callable[[int, str], float]]:
        """Scratch space for new disks while the block runs (the shared tree is built on
        entry, not timed). The block gets create(size_gb, preallocation) -> seconds to
        allocate and fill one disk, which is removed again before the next."""
        ...


@dataclass(frozen=True)
class ThreadGroup:
    """Host threads doing an environment's back-end work, and the cpu cgroup they live in."""

    pids: list[int]  # the processes that own them (QEMU)
    tids: list[int]  # the back-end threads: QEMU's main loop and I/O threads, not its vCPUs
    cpu_cgroup: str | None  # their cpu cgroup directory; None: not in a group of their own


@runtime_checkable
class BackendThreads(Protocol):
    """Host threads that do the environment's device back-end work (Xen's Dom0 / qemu-dm)."""

    def backend_threads(self) -> ThreadGroup | None:
        """None while there are none (not provisioned)."""
        ...


@runtime_checkable
class VcpuThreads(Protocol):
    """The environment's CPUs are virtual: host threads (CFS tasks) run them, so host
    scheduler policies on its own processes (SCHED_RR inside) do not reach the host."""

    def vcpu_threads(self) -> list[int]: ...


@runtime_checkable
class RuntimeTools(Protocol):
    """Host executables a platform of this type runs on (an OCI runtime, QEMU): their versions
    matter to a comparison of its figures (analysis/fingerprint.py)."""

    @classmethod
    def runtime_tools(cls, options: dict[str, Any]) -> frozenset[str]:
        """From the options as written in the campaign (`PlatformSpec.options`)."""
        ...


@runtime_checkable
class HostDevice(Protocol):
    """Its disk I/O reaches the host's device with no layer between: its O_DIRECT figures
    are the device's own, the reference for a run without a disk ceiling
    (analysis/plausibility.py)."""

    @classmethod
    def host_device(cls) -> bool: ...


@runtime_checkable
class HostTools(Protocol):
    """Its workloads run the host's own executables (no image or guest between): the host
    must have a workload's tools before anything is measured (runner/run.py preflight)."""

    @classmethod
    def host_tools(cls) -> bool: ...


@runtime_checkable
class IsolationModes(Protocol):
    """Its network, storage and runtime are modes its options choose: platforms of its type
    equal but for one of them are compared mode against mode (seed 004 Figs. 4-5,
    report/suites/container_modes.py, which reads these defaults from the run's host facts)."""

    @classmethod
    def mode_defaults(cls) -> dict[str, str]:
        """The mode options' defaults (what an option left out of the campaign means)."""
        ...


# what each capability gives, for the message when a platform lacks it
_WHAT: dict[type, str] = {
    CpuWeight: "a CPU weight on the environment",
    RtBudget: "a real-time budget of the environment's own",
    ColdStart: "cold starts of fresh instances",
    FreshBoot: "fresh boots of the platform (a vm)",
    DiskImages: "creating VM disk images (a vm)",
    BackendThreads: "the environment's host back-end threads",
    VcpuThreads: "virtual CPUs",
}

C = TypeVar("C")


def require(
    platform: Any,
    capability: type[C],
    needed_by: str,
    hint: str = "",
    error: type[Exception] = PlatformError,
) -> C:
    """`platform` as `capability`, or `error` naming the platform and what is needed (a
    workload passes WorkloadError: only its cell fails)."""
    if isinstance(platform, capability):
        return platform
    what = _WHAT.get(capability, capability.__name__)
    raise error(
        f"{needed_by} needs {what}, which platform '{platform.name}' "
        f"(type {platform.kind}) does not offer{hint}"
    )
