"""One OCI container on the host: cgroup, root filesystem, network, bundle, runtime process.

Used twice: the container platform keeps one long-running instance (init `sleep infinity`,
workloads enter it with `runtime exec`, like `docker exec`), and the start-up test case makes
fresh instances whose init is the workload itself, timing every phase (like `docker run`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import resource
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ... import cgroups, cleanup, hostnet
from ...errors import PlatformError
from ..base import ExecResult
from ..procs import run_host
from . import runtimes, spec
from .storage import Storage

NETWORK_MODES = ("host", "bridge", "nat")


@dataclass
class Config:
    runtime: str = "crun"
    storage: str = "overlay"
    network: str = "host"
    resources: spec.Resources = field(default_factory=spec.Resources)
    # real-time bandwidth to reserve (µs per rt period, or "auto": what is free); it only
    # matters on v1 hosts with RT group scheduling, where SCHED_FIFO needs it
    rt_runtime_us: int | str | None = cgroups.RT_AUTO
    rt_period_us: int | None = None  # None: the host's rt period
    docker_nat: str | None = None  # runtime docker, network nat: userland-proxy | iptables
    runsc: str = "debian"  # runtime runsc: which gVisor build (gvisor_build.py)
    publish_port_offset: int = 20000  # engines that publish at start: host = inner + offset
    # a shared CPU budget's group (cgroups/budget.py) to make the container's group in; its
    # own quota is then dropped (the budget is its quota) and it gets no RT bandwidth
    cgroup_parent: str | None = None


class Instance:
    def __init__(self, name: str, config: Config, image: Path) -> None:
        self.name = name
        self.config = config
        self.runtime = runtimes.get(config.runtime, config.network, config.docker_nat, config.runsc)
        self.storage = Storage(name, image, config.storage)
        self.cgroup: cgroups.Cgroup | None = None
        self.net: hostnet.Attachment | None = None
        self.timings: dict[str, float] = {}

    @property
    def bundle(self) -> Path:
        return self.storage.dir

    def prepare(self, init_argv: list[str]) -> None:
        """Everything before the runtime starts: claim, cgroup, storage, network, config.json."""
        if self.config.network not in NETWORK_MODES:
            raise PlatformError(
                f"unknown network mode {self.config.network!r}; allowed: {', '.join(NETWORK_MODES)}"
            )
        if self.config.network != "host" and not self.runtime.joins_netns:
            raise PlatformError(
                f'runtime "{self.config.runtime}" cannot join a network namespace made by '
                f'virtbench on this host; use network = "host" with it'
            )
        t = time.monotonic()
        cleanup.claim(self.name)
        self.runtime.prepare()
        # the runtime creates the group at cgroupsPath; making it first prepares the parent
        # (v1 cpuset inheritance, v2 controller delegation) and lets teardown find it
        parent = self.config.cgroup_parent
        group = self.name if parent is None else f"{parent}/{self.name}"
        self.cgroup = cgroups.Cgroup.create(
            group,
            rt_runtime_us=self.config.rt_runtime_us if parent is None else None,
            rt_period_us=self.config.rt_period_us if parent is None else None,
        )
        resources = self.config.resources
        if parent is not None:  # inside a shared budget: the budget is its quota
            resources = dataclasses.replace(resources, cpu_quota_us=None, cpu_period_us=None)
        if self.cgroup.rt_runtime_us:  # the runtime re-applies what the group was granted
            resources = dataclasses.replace(
                resources,
                realtime_runtime_us=self.cgroup.rt_runtime_us,
                realtime_period_us=self.cgroup.rt_period_us,
            )
        own_root = self.runtime.own_rootfs  # docker: its own layer over its imported image
        self.storage.create(mount_root=not own_root)
        if not own_root:  # in the private upper layer: the shared image stays untouched
            (self.storage.rootfs / "etc/hosts").write_text(spec.etc_hosts(self.name))
        netns: str | None = None
        if not self.runtime.own_network:  # docker makes its own; LXC plugs its own veth
            netns, self.net = self.runtime.plug(self.name)
        self.runtime.prepare_instance(
            self.name, self.config.storage, self.config.publish_port_offset
        )
        binds = [] if own_root else [spec.Bind(s, d) for s, d in self.storage.binds()]
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # no CAP_SYS_RESOURCE to raise
        cfg = spec.build(
            spec.ContainerSpec(
                args=init_argv,
                rootfs=str(self.storage.rootfs),
                hostname=self.name,
                cgroups_path=f"/{cgroups.PARENT}/{group}",
                netns=netns,
                binds=binds,
                resources=resources,
                nofile=min(nofile, 1 << 20),
            )
        )
        (self.bundle / "config.json").write_text(json.dumps(cfg, indent=1))
        self.timings["prepare_s"] = time.monotonic() - t

    def start_detached(self) -> None:
        argv = self.runtime.run_argv(self.name, self.bundle, detach=True)
        t = time.monotonic()
        # the init inherits stdio: a pipe would stay open until it exits, so use a file
        log = self.bundle / "init.log"
        with open(log, "w") as out:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=120)
        self.timings["start_s"] = time.monotonic() - t
        if r.returncode != 0:
            raise PlatformError(
                f"{self.config.runtime} run failed (exit {r.returncode}): "
                + log.read_text(errors="replace").strip()[-800:]
            )

    def run_foreground(self, timeout: float | None) -> ExecResult:
        """Run the init to completion (the start-up test case): the runtime's own wall time."""
        argv = self.runtime.run_argv(self.name, self.bundle, detach=False)
        return run_host(argv, timeout=timeout)

    def init_pid(self) -> int | None:
        pid = self.runtime.state(self.name).get("pid")
        return int(pid) if pid else None

    def exec(
        self,
        argv: list[str],
        *,
        timeout: float | None,
        env: dict[str, str] | None,
        pid_file: str | None = None,
    ) -> ExecResult:
        full = self.runtime.exec_argv(self.name, argv, env, pid_file)
        result = run_host(full, timeout=timeout)
        if result.timed_out and pid_file:
            self.kill_exec(pid_file)  # the process in the container is not in our group
        return result

    def exec_pid(self, pid_file: str) -> int | None:
        """Host pid of a command started with `pid_file` (None if unknown or gone)."""
        if not self.runtime.pid_files_in_container:
            return read_pid(pid_file)
        from .podman import host_pid

        inner = read_pid(self.runtime.host_pid_file(pid_file))  # type: ignore[attr-defined]
        if inner is None or self.cgroup is None:
            return None
        return host_pid(inner, self.cgroup.pids())

    def kill_exec(self, pid_file: str) -> None:
        pid = self.exec_pid(pid_file)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)

    def destroy(self) -> None:
        """Stop and remove everything; idempotent and safe after a partial prepare()."""
        t = time.monotonic()
        errors: list[str] = []
        for step in (
            # the runtime's delete removes the group, whose rt bandwidth would linger
            lambda: self.cgroup.drop_rt() if self.cgroup else None,
            lambda: self.runtime.delete(self.name),
            self.runtime.release_root,  # the runtime's own mounts, after its last container
            lambda: self.cgroup.destroy() if self.cgroup else None,
            lambda: hostnet.unpublish(self.name),
            lambda: hostnet.detach(self.name),
            lambda: hostnet.delete_netns(self.name),
            self.storage.destroy,
        ):
            try:
                step()
            except (PlatformError, OSError, subprocess.SubprocessError) as exc:
                errors.append(str(exc))
        cleanup.release(self.name)
        self.timings["teardown_s"] = time.monotonic() - t
        if errors:
            raise PlatformError(f"container {self.name} teardown: " + "; ".join(errors))


def read_pid(pid_file: str) -> int | None:
    try:
        return int(Path(pid_file).read_text().strip())
    except (OSError, ValueError):
        return None


def kill_pid_file(pid_file: str) -> None:
    pid = read_pid(pid_file)
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
