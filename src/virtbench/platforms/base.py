"""The platform contract: provision, exec, spawn, endpoint, workdir, accounting, teardown.

A platform is one execution environment. Platforms stack: a platform may have a `host`
platform through whose `exec` it runs its own commands (e.g. a container inside a VM).
Workloads see only this interface, never which platform they run on.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .. import directio
from ..errors import WorkloadError, WorkloadTimeout
from ..naming import NAME_PREFIX
from ..tools import missing_hint
from .options import PlatformOptions

if TYPE_CHECKING:
    from ..cgroups import CpuBudget

__all__ = [
    "NAME_PREFIX",
    "Accounting",
    "ExecResult",
    "Platform",
    "PlatformSpec",
    "Process",
    "check",
]

OptionsT = TypeVar("OptionsT", bound=PlatformOptions)


@dataclass
class ExecResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool = False
    # CPU seconds the command used, where the platform can account it (user, system).
    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def check(result: ExecResult, what: str) -> None:
    """Raise WorkloadError with the tool's own words if the run failed."""
    if result.timed_out:
        raise WorkloadTimeout(
            f"{what}: timed out after {result.elapsed_s:.0f}s: {' '.join(result.argv)}"
        )
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise WorkloadError(
            f"{what}: {result.argv[0]} exited {result.returncode}: "
            + " | ".join(tail)
            + not_found(result.argv[0], result.returncode, result.stderr)
        )


NOT_FOUND = 127  # a command not found: sh, env, docker and podman exec, run_host
# how crun and runc say it (their exec exits 255): "executable file `java` not found in $PATH"
NOT_FOUND_WORDS = ("not found in $PATH",)


def not_found(command: str, returncode: int | None, stderr: str = "") -> str:
    """'; <where `command` comes from>' when the exit status or the runtime's words say it was
    not found, else ''."""
    said = returncode not in (0, None) and any(w in stderr for w in NOT_FOUND_WORDS)
    if returncode != NOT_FOUND and not said:
        return ""
    return f"; command not found: {missing_hint(command)}"


@dataclass
class Accounting:
    """Where the metrics layer reads CPU/schedstat/net/disk for one environment."""

    pids: list[int] = field(default_factory=list)  # processes whose tasks belong to it
    threads: list[int] = field(default_factory=list)  # specific thread ids (e.g. vCPU threads)
    cgroups: dict[str, str] = field(default_factory=dict)  # controller -> absolute cgroup dir
    net_ifaces: list[str] = field(default_factory=list)  # host-side interface names
    extra: dict[str, Any] = field(default_factory=dict)


class Process(abc.ABC):
    """A long-running command started with `Platform.spawn` (servers, antagonists)."""

    @property
    @abc.abstractmethod
    def pid(self) -> int | None:
        """Host PID of the process where known (None inside a VM)."""

    @abc.abstractmethod
    def poll(self) -> int | None:
        """Exit code if it has exited, else None."""

    @abc.abstractmethod
    def stop(self, timeout: float = 5.0) -> ExecResult:
        """Terminate (TERM then KILL) and return what it printed."""


@dataclass
class PlatformSpec:
    """One `[[platforms]]` entry of a campaign: a name, a type and type-specific options."""

    name: str
    type: str
    options: dict[str, Any] = field(default_factory=dict)  # as written in the campaign
    host: PlatformSpec | None = None  # for stacked platforms like container@vm

    def parsed(self, options_type: type[OptionsT]) -> OptionsT:
        """The options parsed as `options_type`, once per spec: the campaign loader parses
        every spec it makes; a spec built in code is parsed when a platform is made from it.
        (Kept outside the fields, so `dataclasses.replace` with new options parses anew.)"""
        done = self.__dict__.get("_parsed")
        if type(done) is not options_type:
            done = self.__dict__["_parsed"] = options_type.parse(self.options, self.name)
        return done


class Platform(abc.ABC):
    kind: ClassVar[str]  # "native", "container", "vm"
    description: ClassVar[str]
    Options: ClassVar[type[PlatformOptions]] = PlatformOptions  # this type's typed options
    # option name -> (default, allowed values or None for free-form, help): Options.schema
    options_schema: ClassVar[dict[str, tuple[Any, tuple[Any, ...] | None, str]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.options_schema = cls.Options.schema  # declared once, with the options type

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> list[tuple[str, str, Any]]:
        """Every bad option as (key, problem, allowed), [] if all are fine; `options` holds
        only what the campaign set."""
        return [(p.key, p.problem, p.allowed) for p in cls.Options.problems(options)]

    def __init__(
        self,
        spec: PlatformSpec,
        instance: str,
        host: Platform | None = None,
        *,
        budget: CpuBudget | None = None,  # the shared CPU budget it is made in (None: none)
    ) -> None:
        self.spec = spec
        self.instance = instance  # unique per provisioned environment, starts with NAME_PREFIX
        self.host = host
        self.opts = spec.parsed(self.Options)  # typed: what the platform reads
        self.options = dict(self.opts.values)  # as written, defaults filled in (labels)
        # a CPU budget shared with other environments (cgroups/budget.py), given when it is
        # made: the platform makes its host cgroup inside it, with no quota of its own
        self.budget = budget

    @classmethod
    def host_cpu_quota(cls, spec: PlatformSpec) -> tuple[int, int | None] | None:
        """(quota µs, period µs or None) of the CFS quota the host puts on an environment of
        `spec` alone (what a shared CPU budget takes over); None: none. Every platform type
        names it `cpu_quota_us` / `cpu_period_us`; a type that caps otherwise overrides it."""
        quota = spec.options.get("cpu_quota_us")
        if quota is None:
            return None
        period = spec.options.get("cpu_period_us")
        return int(quota), (int(period) if period is not None else None)

    @classmethod
    def guest_cpu_quota(cls, spec: PlatformSpec) -> int | None:
        """A CFS quota (µs) that caps an environment of `spec` from inside its VM guest, where
        the host can neither share nor lift it; None: none (not stacked, or no quota)."""
        if spec.host is None:
            return None
        quota = spec.options.get("cpu_quota_us")
        return int(quota) if quota is not None else None

    @classmethod
    def pinnable_cpus(cls, spec: PlatformSpec, cpus: list[int]) -> tuple[list[int], str | None]:
        """Host CPUs of `cpus` an environment of `spec` may be pinned to, and the option that
        limits them (None: all of them)."""
        return list(cpus), None

    @property
    def name(self) -> str:
        return self.spec.name

    def labels(self) -> dict[str, Any]:
        """Facts recorded with every result from this platform (runtime, storage, accel...)."""
        out = {"platform_type": self.kind, **self.options}
        if (budget := self.cpu_budget()) is not None:
            out |= budget.facts().labels()
        return out

    def cpu_budget(self) -> CpuBudget | None:
        """The shared CPU budget its host-side processes run in (its own, or its host's)."""
        if self.budget is not None:
            return self.budget
        return self.host.cpu_budget() if self.host is not None else None

    @abc.abstractmethod
    def provision(self) -> None:
        """Create the environment. Must be safe to call teardown() after a partial provision."""

    @abc.abstractmethod
    def teardown(self) -> None:
        """Destroy the environment; idempotent."""

    @abc.abstractmethod
    def exec(
        self,
        argv: list[str],
        *,
        cpus: list[int] | None = None,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run argv to completion inside the environment, pinned to host `cpus` if given."""

    @abc.abstractmethod
    def spawn(
        self,
        argv: list[str],
        *,
        cpus: list[int] | None = None,
        env: dict[str, str] | None = None,
    ) -> Process:
        """Start argv in the background inside the environment."""

    @abc.abstractmethod
    def endpoint(self, port: int) -> tuple[str, int]:
        """Address a client on the host uses to reach `port` served inside."""

    def server_ports(self) -> list[int] | None:
        """The ports a server inside must pick from, where the platform decides them before
        it starts (Docker publishes its `-p` ports at `docker run`); None: any free port."""
        return None

    def recover_network(self) -> tuple[str, bool]:
        """Called when a server inside became unreachable: what the platform can tell about
        its own network ("" when nothing), and whether it reset something worth a second
        look (the caller probes again). The default knows nothing and resets nothing."""
        return "", False

    def network_stall(self) -> str | None:
        """Called after every measured client run: if the platform's network stalled during
        it (a VM guest's transmit ring QEMU stopped reading: vm/nicstall.py), reset it and say
        what was found, so the caller flags that measurement invalid and the next one runs
        on a working NIC; None while it is healthy. Must cost next to nothing then (it runs
        between measurements). The default has no such stall."""
        return None

    def listen_address(self) -> str | None:
        """The address a server inside binds to so that only its client reaches it (the one
        `endpoint` leads to, as seen inside); None: every address (the environment's own
        network namespace is reachable only from the host)."""
        return None

    @property
    @abc.abstractmethod
    def workdir(self) -> str:
        """A writable directory, as seen inside the environment, for disk tests."""

    @abc.abstractmethod
    def accounting(self) -> Accounting:
        """Where to read this environment's resource use."""

    def direct_io(self) -> str:
        """How O_DIRECT in workdir reaches the host device: `directio.HONOURED`, or
        `directio.cached(why)` where a layer of this platform serves it from a cache (the
        mechanism, with how to get a device figure). Recorded on every O_DIRECT sample;
        such samples are invalid whatever their figure (directio.py)."""
        return directio.HONOURED

    @classmethod
    def host_data_dir(cls, spec: PlatformSpec) -> str | None:
        """The host directory whose filesystem holds the workdir data of a platform made
        from `spec` (where the host's disk ceiling is measured: ceiling/), known before it
        is provisioned; None: not known (a platform stacked on another asks its host)."""
        return None

    def put_file(self, host_path: str, dest: str | None = None, mode: int = 0o755) -> str:
        """Make a host file (e.g. a probe binary built on the host) available inside the
        environment; return its path as seen inside. `dest` defaults to workdir/basename.

        This portable default copies through `exec` (sh + base64 in chunks below the kernel's
        per-argument limit), so it works on any platform that can run `sh`; platforms that
        share the host filesystem (native) or have a faster channel (bind mount, 9p, image)
        override it.
        """
        from .put_file import copy_via_exec  # local import: keeps base free of helpers

        return copy_via_exec(self, host_path, dest, mode)

    def __enter__(self) -> Platform:
        try:
            self.provision()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()
