"""The `container` platform: an OCI container run by crun, runc or runsc (gVisor), with
Docker's storage (overlay vs volume) and network (host, bridge, nat) modes and cgroup limits.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
from contextlib import AbstractContextManager
from typing import Any

from ... import cgroups, cleanup, directio, hostfs, hostnet, labelkeys, parsing, tools
from ...errors import NeedsRootError, PlatformError
from ...images import rootfs
from ..base import NAME_PREFIX, Accounting, ExecResult, Platform, PlatformSpec, Process
from ..capabilities import StartupTiming
from ..cpu_weight import weighted
from ..procs import HostProcess
from ..registry import register
from . import runtimes
from .instance import Config, Instance
from .options import SCHEMA, ContainerOptions
from .storage import DATA_PATH, STATE_DIR


class _ContainerProcess(Process):
    """A background `runtime exec`; stopping it signals the process inside via its pid file."""

    def __init__(self, proc: HostProcess, inst: Instance, pid_file: str, hint=None) -> None:
        self._proc, self._inst, self._pid_file = proc, inst, pid_file
        self._hint = hint  # adds the reason to the stderr of a failed process

    @property
    def pid(self) -> int | None:
        return self._inst.exec_pid(self._pid_file)

    def poll(self) -> int | None:
        return self._proc.poll()

    def stop(self, timeout: float = 5.0) -> ExecResult:
        pid = self.pid
        if pid and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
            deadline = time.monotonic() + timeout
            while self._proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            self._inst.kill_exec(self._pid_file)
        r = self._proc.stop(timeout=timeout)
        if self._hint is not None and r.returncode not in (0, -15, 143):
            r.stderr += self._hint(r.stderr)
        return r


@register
class ContainerPlatform(Platform):
    kind = "container"
    description = "an OCI container (crun, runc, runsc, podman) from the shared Debian image"
    Options = ContainerOptions
    opts: ContainerOptions

    @classmethod
    def runtime_tools(cls, options: dict[str, Any]) -> frozenset[str]:
        """capabilities.RuntimeTools: its OCI runtime (podman runs crun)."""
        runtime = options.get("runtime") or "crun"
        return frozenset({"podman", "crun"} if runtime == "podman" else {runtime})

    @classmethod
    def mode_defaults(cls) -> dict[str, str]:
        """capabilities.IsolationModes: its runtime, storage and network options."""
        return {k: SCHEMA[k][0] for k in ("runtime", "storage", "network")}

    def __init__(
        self,
        spec_,
        instance: str,
        host: Platform | None = None,
        budget: cgroups.CpuBudget | None = None,
    ) -> None:
        super().__init__(spec_, instance, host, budget=budget)
        o = self.opts
        self.config = Config(
            o.runtime, o.storage, o.network, o.resources, o.rt_runtime_us, o.rt_period_us
        )
        self.config.docker_nat = o.docker_nat
        self.config.runsc = o.runsc
        self.config.publish_port_offset = o.publish_port_offset
        self._offset = o.publish_port_offset
        self._inst: Instance | None = None
        self._procs: list[HostProcess] = []
        self._published: dict[int, tuple[str, int]] = {}
        self._seq = 0
        self._ifaces: dict[str, list[str]] = {}  # engine-made veths (docker), per instance

    @classmethod
    def pinnable_cpus(cls, spec: PlatformSpec, cpus: list[int]) -> tuple[list[int], str | None]:
        """Its `cpuset` limits it (taskset inside cannot leave it)."""
        value = spec.options.get("cpuset")
        if value is None:
            return list(cpus), None
        try:
            own = parsing.cpu_list(value)
        except parsing.ParseError:  # the loader refuses a bad cpuset; never widen on one here
            own = []
        return [c for c in cpus if c in own], f"cpuset = {value!r}"

    # --- lifecycle ----------------------------------------------------------------------
    def _image(self):
        if os.geteuid() != 0:
            raise NeedsRootError("the container platform")
        c = self.config  # names the package if not installed (docker: starts the daemon)
        runtimes.get(c.runtime, c.network, c.docker_nat, c.runsc).prepare()
        # builds the shared image on first use (minutes, with progress) and caches it
        return rootfs.rootfs_tree(lambda m: print(m, flush=True))

    def provision(self) -> None:
        image = self._image()
        self.config.cgroup_parent = self.budget.name if self.budget is not None else None
        self._inst = Instance(self.instance, self.config, image)
        self._inst.prepare(["sleep", "infinity"])
        self._inst.runtime.populate(self._inst.storage.host_path)
        self._inst.start_detached()
        self._inst.runtime.after_start(self._inst.name)

    def teardown(self) -> None:
        for p in self._procs:
            p.stop(timeout=2)
        self._procs.clear()
        if self._inst is not None:
            inst, self._inst = self._inst, None
            inst.destroy()

    def cold_start(self, argv: list[str], timeout: float | None = 60) -> StartupTiming:
        """A fresh sibling instance (same runtime/storage/network/limits) whose init is argv:
        what `docker run` costs, measured from before anything of it existed."""
        image = self._image()
        inst = Instance(NAME_PREFIX + secrets.token_hex(3), self.config, image)
        created = time.time()
        try:
            inst.prepare(argv)
            runtime_at = time.time()
            result = inst.run_foreground(timeout)
            exited = time.time()
        finally:
            inst.destroy()
        return StartupTiming(
            created_at=created,
            result=result,
            exited_at=exited,
            prepare_s=inst.timings.get("prepare_s", 0.0),
            teardown_s=inst.timings["teardown_s"],
            runtime_at=runtime_at,
        )

    # --- running things -----------------------------------------------------------------
    def _live(self) -> Instance:
        if self._inst is None:
            raise PlatformError(f"container {self.instance} is not provisioned")
        return self._inst

    def _pinned(self, argv: list[str], cpus: list[int] | None) -> list[str]:
        # pin inside: the runtime moves exec'd tasks into the container's cgroup, and a v1
        # cpuset move resets affinity set on the host side
        if not cpus or self.config.runtime == "runsc":
            return list(argv)
        return ["taskset", "-c", ",".join(str(c) for c in sorted(cpus)), *argv]

    def _pid_file(self) -> str:
        self._seq += 1
        return str(self._live().bundle / f"exec-{self._seq}.pid")

    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        inst = self._live()
        pid_file = self._pid_file()
        ooms = self._oom_kills()
        try:
            r = inst.exec(self._pinned(argv, cpus), timeout=timeout, env=env, pid_file=pid_file)
        finally:
            _unlink(pid_file)
        if not r.ok and self._oom_kills() > ooms:
            # say why in the tool's own stream, so the failed cell records the reason
            r.stderr += (
                f"\nkilled by the OOM killer: the container's memory_limit "
                f"({self.options['memory_limit']}) is below what {argv[0]} needs"
            )
        if not r.ok:
            r.stderr += self._rt_hint(r.stderr)
        return r

    def _rt_hint(self, stderr: str) -> str:
        """Why SCHED_FIFO/RR failed when the container's group holds no rt bandwidth."""
        cg = self._inst.cgroup if self._inst is not None else None
        if cg is None or cg.rt_runtime_us != 0 or "Operation not permitted" not in stderr:
            return ""
        return (
            f"\nthe container's cgroup holds no real-time bandwidth (rt_runtime_us = "
            f"{self.options['rt_runtime_us']!r} was granted 0 µs: other virtbench groups hold "
            "the host's real-time budget), so SCHED_FIFO/SCHED_RR are refused inside it"
        )

    def _oom_kills(self) -> int:
        cg = self._live().cgroup
        try:
            return cg.memory_stat().get("oom_kills", 0) if cg else 0
        except (OSError, PlatformError):
            return 0

    def spawn(self, argv, *, cpus=None, env=None) -> Process:
        inst = self._live()
        pid_file = self._pid_file()
        full = inst.runtime.exec_argv(inst.name, self._pinned(argv, cpus), env, pid_file)
        proc = HostProcess(full)
        self._procs.append(proc)
        return _ContainerProcess(proc, inst, pid_file, self._rt_hint)

    def endpoint(self, port: int) -> tuple[str, int]:
        inst = self._live()
        own = inst.runtime.endpoint(inst.name, port)  # docker: its network, its -p
        if own is not None:
            return own
        if self.config.network == "host":
            return ("127.0.0.1", port)
        assert inst.net is not None
        if self.config.network == "bridge":
            return (inst.net.address, port)
        if port not in self._published:
            self._published[port] = hostnet.publish(
                inst.name, port + self._offset, inst.net.address, port
            )
        return self._published[port]

    def server_ports(self) -> list[int] | None:
        inst = self._live()
        return inst.runtime.server_ports(inst.name)

    def listen_address(self) -> str | None:
        if self.config.network == "host":
            return "127.0.0.1"  # the host's own network: never every address
        inst = self._live()
        return inst.net.address if inst.net is not None else None  # bridge, and nat's DNAT

    @property
    def workdir(self) -> str:
        return DATA_PATH

    @classmethod
    def host_data_dir(cls, spec) -> str | None:
        return str(STATE_DIR)  # the overlay's upper layer and the volume live there

    def _runtime(self) -> runtimes.OciRuntime:
        """The running instance's runtime, or one made like it (before provision)."""
        if self._inst is not None:
            return self._inst.runtime
        c = self.config
        return runtimes.get(c.runtime, c.network, c.docker_nat, c.runsc)

    def direct_io(self) -> str:
        c = self.config
        runtime = self._runtime()
        by_runtime = runtime.direct_io(c.storage)
        if directio.why_cached(by_runtime):
            return by_runtime
        # the upper layer (or volume) is a host directory: memory if its filesystem is
        fs = hostfs.mount_of(STATE_DIR).fs_type
        if fs in hostfs.MEMORY_FILESYSTEMS:
            return directio.cached(
                f"the container's {c.storage} data lives in {STATE_DIR} on {fs} (memory);"
                " set VIRTBENCH_CONTAINERS to a directory on a disk"
            )
        return by_runtime

    def put_file(self, host_path: str, dest: str | None = None, mode: int = 0o755) -> str:
        # the container's root and volume are host directories: copy straight in
        inst = self._live()
        dest = dest or f"{DATA_PATH}/{os.path.basename(host_path)}"
        if inst.runtime.own_rootfs:  # docker: its layer or volume, found by inspect
            target = inst.runtime.host_path(inst.name, dest)  # type: ignore[attr-defined]
        else:
            target = inst.storage.host_path(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(host_path, target)
        os.chmod(target, mode)
        return dest

    def accounting(self) -> Accounting:
        inst = self._live()
        cg = inst.cgroup
        return Accounting(
            pids=cg.pids() if cg else [],
            cgroups=cg.paths() if cg else {},
            net_ifaces=[inst.net.host_if] if inst.net else self._engine_ifaces(inst),
            extra={
                "runtime": self.config.runtime,
                "container_id": inst.name,
                "init_pid": inst.init_pid(),
                "address": inst.net.address if inst.net else None,
                "rootfs": str(inst.storage.rootfs),
            },
        )

    def _engine_ifaces(self, inst: Instance) -> list[str]:
        if not inst.runtime.own_network:
            return []
        if inst.name not in self._ifaces:  # looked up once: the veth lives as long as it
            self._ifaces[inst.name] = inst.runtime.host_ifaces(inst.name)  # type: ignore[attr-defined]
        return self._ifaces[inst.name]

    def labels(self) -> dict[str, Any]:
        image = rootfs.existing()
        runtime = self._runtime()
        return {
            **super().labels(),
            "runtime_version": tools.version(self.config.runtime),
            "image": image.parent.name if image else None,
            "cgroup": cgroups_version(),
            **runtime.labels(),
            **self._rt_labels(),
            **self._engine_label(runtime),
        }

    def _engine_label(self, runtime) -> dict[str, Any]:
        # what the engine ran with, read from it (runsc's config dump, docker info, LXC's file)
        found = runtime.engine(self._inst.name if self._inst is not None else None)
        return {labelkeys.ENGINE: found} if found else {}

    def _rt_labels(self) -> dict[str, Any]:
        # what the container's group was granted (the option may say "auto")
        cg = self._inst.cgroup if self._inst is not None else None
        if cg is None or cg.rt_runtime_us is None:
            return {}
        return {"rt_runtime_granted_us": cg.rt_runtime_us, "rt_period_us": cg.rt_period_us}

    # --- real-time budget, re-split by scenarios (scenarios/rt_budget.py) ----------------
    def rt_budget(self) -> tuple[int, int] | None:
        """(rt runtime µs, period µs) the container's group holds; None where not applicable
        (no RT group scheduling, or not provisioned)."""
        cg = self._inst.cgroup if self._inst is not None else None
        if cg is None or cg.rt_runtime_us is None or cg.rt_period_us is None:
            return None
        return cg.rt_runtime_us, cg.rt_period_us

    def set_rt_budget(
        self, runtime_us: int, period_us: int | None = None, cap_to_free: bool = False
    ) -> int | None:
        """Change the running container's rt runtime (µs of `period_us`, default the host's
        rt period; no SCHED_FIFO/RR task may run in it while it is lowered to 0); returns
        what was granted."""
        cg = self._live().cgroup
        if cg is None:
            return None
        return cg.set_rt_runtime(runtime_us, cap_to_free=cap_to_free, period_us=period_us)

    # --- CPU weight, set by scenarios (scenarios/weights.py) -----------------------------
    def cpu_weight(self, shares: int) -> AbstractContextManager[str]:
        return weighted(self, shares, "its own cgroup")


def cgroups_version() -> str:
    return cgroups.version()


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@cleanup.register("containers")
def clean() -> list[str]:
    """Containers of dead runs still known to a runtime (the other cleaners remove the rest)."""
    removed = []
    for rt in runtimes.every():
        name = rt.name
        for cid in rt.list_ids():
            if not cleanup.in_use(cid):
                before = cleanup.processes_in_cgroup(cid)
                rt.delete(cid)
                removed.extend(cleanup.ended(before, f"container {cid}"))
                removed.append(f"{name} container {cid}")
        removed += [f"{name} mount {mnt}" for mnt in rt.release_root()]
    return removed
