"""container@vm: an OCI container run *inside* a guest, entirely through the guest's exec.

The guest holds the same root filesystem as the host's container image (one debootstrap tree,
crun included), so the container's root is an overlayfs over a bind mount of the guest's own
root, with its upper layer on the VM's disk; `storage = "volume"` bind-mounts a guest
directory at the data path instead. The OCI config comes from the container platform's pure
spec builder, so it is the same container as on the host - only one layer deeper (seed 000's
HVMCON/PVMCON, seed 004's vm.aufs). Network: the guest's namespace (`host`), or its own
namespace on a bridge in the guest (`bridge`, `nat`; see innernet.py). Resource limits land
in the guest's cgroup v2 hierarchy, where crun creates /sys/fs/cgroup/virtbench/<id>.

`runtime = "docker"` runs the same container through a dockerd inside the guest instead
(guestdocker.py: the host's Docker engine code driven through the agent): Docker's overlay2
layer over the guest's root imported as an image (or a Docker volume at the data path), the
guest's network or a `-p` block on the guest's address (userland proxy or iptables DNAT),
its cgroup /sys/fs/cgroup/virtbench/<docker id>.
"""

from __future__ import annotations

import base64
import contextlib
import json
import posixpath
from contextlib import AbstractContextManager
from pathlib import PurePosixPath
from typing import Any

from ... import cgroups, cleanup, directio, hostnet, labelkeys
from ...errors import PlatformError
from ..base import Accounting, ExecResult, Platform, Process
from ..capabilities import BackendThreads, ThreadGroup, VcpuThreads
from ..container import gvisor_build, runtimes
from ..container import spec as oci
from ..container.options import ContainerOptions
from ..container.storage import DATA_PATH
from ..cpu_weight import weighted
from ..registry import register_stacked
from . import guestdocker, innernet
from .modules import CONTAINER_NET_MODULES

GUEST_ROOT = "/var/lib/vb-containers"  # inside the guest, on the VM's disk
GUEST_CGROUP_ROOT = "/sys/fs/cgroup"  # the guest mounts cgroup2 here (initramfs stage 2)
RUNTIMES_IN_GUEST = ("crun", "runc", "docker")
DOCKER_NETWORKS = ("host", "nat")  # Docker's own bridge in a guest is not on the host's


class _GuestDockerProcess(Process):
    """A background `docker exec` in the guest; stopping it signals the command inside the
    container by the pid it recorded (killing the docker client alone would leave it)."""

    def __init__(self, proc: Process, kill) -> None:
        self._proc, self._kill = proc, kill

    @property
    def pid(self) -> int | None:
        return None  # a pid inside the guest's container, not a host pid

    def poll(self) -> int | None:
        return self._proc.poll()

    def stop(self, timeout: float = 5.0) -> ExecResult:
        if self._proc.poll() is None:
            self._kill("TERM")
        return self._proc.stop(timeout=timeout)


@register_stacked
class StackedContainer(Platform):
    kind = "container"
    description = "an OCI container inside another platform (container@vm), via its exec"
    Options = ContainerOptions  # the same options as a container on the host
    runs_in = ("vm",)  # host platform types (the campaign loader checks `host` against it)
    opts: ContainerOptions

    def __init__(self, spec, instance: str, host: Platform) -> None:
        super().__init__(spec, instance, host)
        self.host: Platform = host
        if self.opts.runtime not in RUNTIMES_IN_GUEST:
            raise PlatformError(
                f"platform '{spec.name}': runtime = {self.opts.runtime!r} cannot run inside "
                f"'{host.name}'; allowed inside a VM: {', '.join(RUNTIMES_IN_GUEST)}"
            )
        self.resources = self.opts.resources
        self.docker: guestdocker.GuestDocker | None = None
        if self.opts.runtime == "docker":
            if self.opts.network not in DOCKER_NETWORKS:
                raise PlatformError(
                    f"platform '{spec.name}': network = {self.opts.network!r} with runtime = "
                    f"\"docker\" inside '{host.name}' would put the container on Docker's bridge "
                    "in the guest, which the host does not reach; allowed inside a VM: "
                    + ", ".join(DOCKER_NETWORKS)
                )
            self.docker = guestdocker.GuestDocker(host, self.opts.network, self.opts.docker_nat)  # type: ignore[arg-type]
            self.runtime: runtimes.OciRuntime = self.docker
        else:
            if self.opts.runsc != gvisor_build.DEBIAN:  # the guest runs the image's runsc
                raise PlatformError(
                    f"platform '{spec.name}': runsc = {self.opts.runsc!r} inside '{host.name}':"
                    ' a container in a VM runs the guest image\'s runsc; allowed: "debian"'
                )
            self.runtime = runtimes.get(self.opts.runtime, "host")
        self.dir = f"{GUEST_ROOT}/{instance}"
        self._cgroup_leaf = instance  # docker: its container id (cgroupfs: parent/<id>)
        self._seq = 0
        self._listen: str | None = None
        self.net: innernet.InnerAttachment | None = None
        self._published: dict[int, tuple[str, int]] = {}
        self._guest_facts: dict[str, Any] = {}
        self._ooms = 0

    # --- helpers ------------------------------------------------------------------------
    def _sh(self, script: str, *args: str, timeout: float = 120, what: str = "") -> ExecResult:
        r = self.host.exec(["sh", "-c", script, "sh", *args], timeout=timeout)
        if not r.ok:
            tail = (r.stderr or r.stdout).strip()[-600:]
            raise PlatformError(f"{self.name} in {self.host.name}: {what} failed: {tail}")
        return r

    @property
    def guest_cgroup(self) -> str:
        """The container's cgroup directory inside the guest (crun's cgroupsPath)."""
        return f"{GUEST_CGROUP_ROOT}/virtbench/{self._cgroup_leaf}"

    def _config(self) -> dict[str, Any]:
        docker = self.docker is not None  # Docker makes its own root, volume and network
        volume = self.opts.storage == "volume" and not docker
        binds = [oci.Bind(f"{self.dir}/volume", DATA_PATH)] if volume else []
        return oci.build(
            oci.ContainerSpec(
                args=["sleep", "infinity"],
                rootfs=f"{self.dir}/rootfs",
                hostname=self.instance,
                # Docker's cgroupfs driver makes <parent>/<id>: siblings of crun's groups,
                # so weights between containers compare as they do for crun
                cgroups_path="/virtbench" if docker else f"/virtbench/{self.instance}",
                netns=self.net.netns if self.net is not None else None,  # None: the guest's
                binds=binds,
                resources=self.resources,
                nofile=1024,
            )
        )

    def _check_cpuset(self) -> None:
        """A cpuset names the guest's CPUs, not the host's."""
        cpus = self.resources.cpuset_cpus
        vcpus = self.host.options.get("vcpus")
        if cpus and isinstance(vcpus, int) and max(cpus) >= vcpus:
            raise PlatformError(
                f"platform '{self.name}': option cpuset = {self.options['cpuset']!r} names CPUs "
                f"the guest of '{self.host.name}' does not have; allowed: 0..{vcpus - 1} "
                f"(its vcpus = {vcpus})"
            )

    def vcpu_threads(self) -> list[int]:
        """The VcpuThreads capability: a container in a VM runs on the guest's vCPUs, so the
        host threads that time-slice it are its VM's vCPU threads."""
        return self.host.vcpu_threads() if isinstance(self.host, VcpuThreads) else []

    # --- lifecycle ----------------------------------------------------------------------
    def provision(self) -> None:
        self._check_cpuset()
        cleanup.claim(self.instance)  # a bridged container's host address lease is ours
        if self.docker is not None:
            self._provision_docker(self.docker)
            return
        binary = self.runtime.binary
        r = self._sh(
            f"command -v {binary} >/dev/null && stat -fc %T {GUEST_CGROUP_ROOT}",
            what=f"finding {binary} and the cgroup filesystem in the guest image",
        )
        fs = r.stdout.strip()
        self._guest_facts["guest_cgroup"] = "v2" if fs == "cgroup2fs" else fs
        d = self.dir
        self._sh(
            'set -e; d="$1"\n'
            'mkdir -p "$d/lower" "$d/upper" "$d/work" "$d/rootfs" "$d/volume" "$2"\n'
            'mount --bind / "$d/lower"\n'
            'mount -t overlay overlay -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" '
            '"$d/rootfs"\n'
            'mkdir -p "$d/rootfs$3"\n'
            'printf %s "$4" > "$d/rootfs/etc/hosts"',  # its hostname resolves (see etc_hosts)
            d,
            str(self.runtime.root),
            DATA_PATH,
            oci.etc_hosts(self.instance),
            what="preparing the container's root filesystem",
        )
        if self.opts.network != "host":
            self.net = self._attach(self.opts.network)
        blob = base64.b64encode(json.dumps(self._config()).encode()).decode()
        self._sh(
            'printf %s "$1" | base64 -d > "$2/config.json"', blob, d, what="writing config.json"
        )
        run = self.runtime.run_argv(self.instance, PurePosixPath(d), detach=True)  # type: ignore[arg-type]
        # the detached init would hold the agent's output pipes open: log to a file instead
        self._sh(
            'd="$1"; shift; exec "$@" > "$d/init.log" 2>&1 < /dev/null',
            d,
            *run,
            what=f"{binary} run",
        )

    def _provision_docker(self, eng: guestdocker.GuestDocker) -> None:
        """dockerd in the guest (started once per guest), the image, then `docker run`."""
        if self.opts.network == "nat":
            self._vm()  # a published port needs the VM's own network
            eng.bind = str(self.host.listen_address())  # where the host's path arrives
        eng.prepare()
        r = self._sh(
            f'mkdir -p "$1/pids" && stat -fc %T {GUEST_CGROUP_ROOT}',
            self.dir,
            what="making the container's directory",
        )
        fs = r.stdout.strip()
        self._guest_facts["guest_cgroup"] = "v2" if fs == "cgroup2fs" else fs
        eng.prepare_instance(self.instance, self.opts.storage, self.opts.publish_port_offset)
        argv = eng.run_command(self.instance, self._config(), f"{self.dir}/pids", detach=True)
        r = self.host.exec(argv, timeout=guestdocker.START_TIMEOUT_S)
        if not r.ok:
            raise PlatformError(
                f"{self.name} in {self.host.name}: docker run failed (exit {r.returncode}): "
                f"{(r.stderr or r.stdout).strip()[-800:]}"
            )
        self._cgroup_leaf = r.stdout.strip().splitlines()[-1]  # the full container id
        eng.after_start(self.instance)

    def _vm(self):
        from .platform import VmPlatform

        if not isinstance(self.host, VmPlatform) or self.host.net is None:
            raise PlatformError(
                f"platform '{self.name}': network = {self.options['network']!r} needs a vm host "
                f"with a network; '{self.host.name}' has none; allowed: \"host\""
            )
        return self.host

    def _attach(self, mode: str) -> innernet.InnerAttachment:
        vm = self._vm()
        if mode == "bridge" and vm.net.mode not in ("bridge", "nat"):
            raise PlatformError(
                f"platform '{self.name}': network = \"bridge\" puts the container on the host's "
                f"bridge through the guest's NIC, but '{vm.name}' uses QEMU user-mode "
                f"networking ({vm.net.fallback_reason or 'network = ' + repr(vm.net.mode)}); "
                f'allowed with it: "host", "nat"; or give \'{vm.name}\' network = "bridge"'
            )
        vm.load_modules(CONTAINER_NET_MODULES)
        netns = f"{innernet.NETNS_DIR}/{self.instance}"
        if mode == "bridge":
            address = hostnet.allocate_ip(self.instance)  # on the host's subnet, like the VM
            net = innernet.InnerAttachment("bridge", address, netns, host_lease=True)
            self.net = net  # teardown releases the lease even if the guest part fails
            script = "\n".join(
                [
                    innernet.uplink_bridge_script(vm.net.cidr, str(vm.net.gateway)),
                    innernet.attach_script(
                        self.instance,
                        address,
                        innernet.UPLINK_BRIDGE,
                        hostnet.GATEWAY,
                        hostnet.SUBNET.prefixlen,
                    ),
                ]
            )
        else:
            self._sh(innernet.nat_bridge_script(), what="creating the NAT bridge in the guest")
            r = self._sh(innernet.nat_lease_script(self.instance), what="leasing an address")
            net = innernet.InnerAttachment("nat", r.stdout.strip(), netns)
            self.net = net
            script = innernet.attach_script(
                self.instance,
                net.address,
                innernet.NAT_BRIDGE,
                innernet.NAT_GATEWAY,
                innernet.NAT_SUBNET.prefixlen,
            )
        self._sh(script, what=f"attaching the container to the guest's {mode} network")
        return net

    def teardown(self) -> None:
        if self.docker is not None:
            with contextlib.suppress(Exception):  # the guest may already be gone
                self.docker.delete(self.instance)
                self.host.exec(["rm", "-rf", self.dir], timeout=60)
            self._published.clear()
            self._listen = None
            cleanup.release(self.instance)
            return
        with contextlib.suppress(Exception):  # the guest may already be gone
            base = " ".join(self.runtime.base())
            script = (
                f'{base} kill "$1" KILL; {base} delete --force "$1"; '
                'umount -l "$2/rootfs"; umount -l "$2/lower"; rm -rf "$2"'
            )
            if self.net is not None:
                script += "\n" + innernet.teardown_script(self.instance)
            self.host.exec(["sh", "-c", script, "sh", self.instance, self.dir], timeout=60)
        if self.net is not None and self.net.host_lease:
            hostnet.detach(self.instance)  # the address lease (no host links carry our name)
        self.net = None
        self._published.clear()
        cleanup.release(self.instance)

    # --- running things -----------------------------------------------------------------
    def _pid_file(self) -> str | None:
        """docker: where an exec'd command records its pid (in the container's namespace):
        stopping the docker client does not stop the command inside."""
        if self.docker is None:
            return None
        self._seq += 1
        return f"{self.dir}/pids/exec-{self._seq}.pid"

    def _kill_inside(self, pid_file: str, sig: str) -> None:
        base = " ".join(self.runtime.base())
        script = f'p=$(cat "$1") && {base} exec "$2" kill -{sig} "$p"; rm -f "$1"'
        with contextlib.suppress(PlatformError):
            self.host.exec(["sh", "-c", script, "sh", pid_file, self.instance], timeout=60)

    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        pid_file = self._pid_file()
        full = self.runtime.exec_argv(self.instance, list(argv), env, pid_file)
        r = self.host.exec(full, cpus=cpus, timeout=timeout)
        if pid_file is not None:
            if r.timed_out:
                self._kill_inside(pid_file, "KILL")
            else:
                self.host.exec(["rm", "-f", pid_file], timeout=30)
        r.argv = list(argv)  # report the workload's command, not the runtime wrapper
        if not r.ok and self.options.get("memory_limit") is not None:
            r.stderr += self._oom_hint(argv[0])
        return r

    def _oom_hint(self, what: str) -> str:
        """Why a command failed when the guest's OOM killer acted in the container's group."""
        try:
            kills = self.guest_cgroup_stat("memory.events").get("oom_kill", 0)
        except PlatformError:
            return ""
        if kills <= self._ooms:
            return ""
        self._ooms = kills
        return (
            f"\nkilled by the guest's OOM killer: the container's memory_limit "
            f"({self.options['memory_limit']}) is below what {what} needs"
        )

    def spawn(self, argv, *, cpus=None, env=None) -> Process:
        pid_file = self._pid_file()
        proc = self.host.spawn(
            self.runtime.exec_argv(self.instance, list(argv), env, pid_file), cpus=cpus
        )
        if pid_file is None:
            return proc
        return _GuestDockerProcess(proc, lambda sig: self._kill_inside(pid_file, sig))

    def endpoint(self, port: int) -> tuple[str, int]:
        if self.docker is not None and self.opts.network == "nat":
            if port not in self._published:
                _addr, outer = self.docker.endpoint(self.instance, port)  # type: ignore[misc]
                # the guest's published port, reached the way the VM's own ports are
                self._published[port] = self.host.endpoint(outer)
            return self._published[port]
        if self.net is None:
            return self.host.endpoint(port)  # shares the guest's network namespace
        if self.net.mode == "bridge":
            return (self.net.address, port)  # on the host's bridge, through the guest's NIC
        if port not in self._published:
            outer = port + self.opts.publish_port_offset
            if outer > 65535:
                raise PlatformError(
                    f"platform '{self.name}': port {port} + publish_port_offset "
                    f"{self.options['publish_port_offset']} = {outer} is above 65535"
                )
            vm = self._vm()
            self._sh(
                innernet.publish_script(
                    self.instance, str(vm.net.guest_ip), outer, self.net.address, port
                ),
                what=f"publishing port {port} in the guest",
            )
            # the guest's published port, reached the way the VM's own ports are
            self._published[port] = self.host.endpoint(outer)
        return self._published[port]

    def recover_network(self) -> tuple[str, bool]:
        return self.host.recover_network()  # its packets leave through the VM's NIC

    def network_stall(self) -> str | None:
        return self.host.network_stall()  # the VM's NIC carries its packets

    def server_ports(self) -> list[int] | None:
        return self.docker.server_ports(self.instance) if self.docker is not None else None

    def listen_address(self) -> str | None:
        if self.docker is not None and self.opts.network == "nat":
            if self._listen is None:  # the container's address on Docker's network
                self._listen = self.docker.address(self.instance)
            return self._listen
        if self.net is None:
            return self.host.listen_address()  # shares the guest's network namespace
        return self.net.address  # bridge, and the guest's DNAT for nat

    @property
    def workdir(self) -> str:
        return DATA_PATH

    def put_file(self, host_path: str, dest: str | None = None, mode: int = 0o755) -> str:
        """docker: into the guest through the VM's own channel, then one `docker cp` (its
        layer or volume); a `docker exec` per chunk costs about a second under TCG."""
        if self.docker is None:
            return super().put_file(host_path, dest, mode)
        name = posixpath.basename(host_path)
        dest = dest or posixpath.join(self.workdir, name)
        staged = self.host.put_file(host_path, f"{self.dir}/files/{name}", mode)
        base = " ".join(self.runtime.base())
        self._sh(
            f'{base} exec "$1" mkdir -p "$(dirname "$3")" && {base} cp "$2" "$1:$3"',
            self.instance,
            staged,
            dest,
            what=f"copying {name} into the container",
        )
        return dest

    def guest_cgroup_stat(self, name: str = "cpu.stat") -> dict[str, int]:
        """A `key value` file of the container's cgroup inside the guest, read through the
        agent (cpu.stat usage_usec/throttled_usec, memory.events oom_kill...)."""
        r = self.host.exec(["cat", f"{self.guest_cgroup}/{name}"], timeout=30)
        if not r.ok:
            raise PlatformError(
                f"{self.name}: cannot read {self.guest_cgroup}/{name} in the guest: "
                f"{r.stderr.strip()}"
            )
        return cgroups.parse_kv(r.stdout)

    def accounting(self) -> Accounting:
        acct = self.host.accounting()  # on the host, the container's cost is the VM's
        acct.extra = {
            **acct.extra,
            "container_id": self.instance,
            "stacked_on": self.host.name,
            "guest_cgroup": self.guest_cgroup,  # inside the guest: read with guest_cgroup_stat
            "address": self.net.address if self.net is not None else None,
        }
        return acct

    def direct_io(self) -> str:
        by_vm = self.host.direct_io()  # the guest's disk first: its cache serves everything
        if directio.why_cached(by_vm):
            return by_vm
        return self.runtime.direct_io(self.opts.storage)

    def labels(self) -> dict[str, Any]:
        host_labels = self.host.labels()
        engine = self.docker.labels() if self.docker is not None else {}
        return {
            **super().labels(),
            **self._guest_facts,
            **engine,
            "stacked_on": self.host.name,
            "host_platform_type": self.host.kind,
            **(
                {"host_engine": host_labels[labelkeys.ENGINE]}
                if labelkeys.ENGINE in host_labels
                else {}
            ),
            **{
                f"host_{k}": host_labels[k]
                for k in ("accel_used", "boot_s", "network_used")
                if k in host_labels
            },
            # the VM's NIC carries the container's packets: its kicks are this target's too
            **{
                k: host_labels[k]
                for k in ("guest_nic_kicks", "guest_nic_stall")
                if k in host_labels
            },
        }

    # --- capabilities (platforms/capabilities.py), through its VM ---------------------------
    def cpu_weight(self, shares: int) -> AbstractContextManager[str]:
        # on the host, the container's cost is the VM's: the weight goes on the VM's cgroup
        return weighted(self, shares, f"the QEMU process's cgroup of its VM '{self.host.name}'")

    def backend_threads(self) -> ThreadGroup | None:
        return self.host.backend_threads() if isinstance(self.host, BackendThreads) else None
