"""OCI runtimes driven through their command line: crun (default), runc, runsc (gVisor).

Each runtime keeps its container state under its own virtbench root (/run/virtbench/oci/
<runtime>) so leftovers are found by listing that root, never by touching containers that
other tools on the host own.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import directio, hostinfo, hostnet, tools
from ...errors import PlatformError
from ..base import NAME_PREFIX
from . import gvisor, gvisor_build, storage

STATE_ROOT = Path("/run/virtbench/oci")
RUNTIMES = ("crun", "runc", "runsc", "podman", "docker")
RUNTIMES += ("lxc",)  # an engine with its own config format: lxc.py


class OciRuntime:
    name = "oci"
    binary = "oci"
    # whether the runtime can join a network namespace we made (`ip netns add`)
    joins_netns = True
    # whether exec pid files hold the container's own pids (podman) instead of host pids
    pid_files_in_container = False
    # engines (docker) that make the container's root filesystem and network themselves
    own_rootfs = False
    own_network = False

    def __init__(self, network: str = "host") -> None:
        self.network = network

    @property
    def root(self) -> Path:
        return STATE_ROOT / self.name

    def base(self) -> list[str]:
        return [self.binary, "--root", str(self.root)]

    def prepare(self) -> None:
        """Check the runtime is installed and the host fits it (idempotent)."""
        tools.require([self.binary], needed_by=f'runtime = "{self.name}"')
        self.root.mkdir(parents=True, exist_ok=True)

    # --- commands -------------------------------------------------------------------------
    def run_argv(self, cid: str, bundle: Path, detach: bool) -> list[str]:
        return [
            *self.base(),
            "run",
            *(["--detach"] if detach else []),
            "--bundle",
            str(bundle),
            cid,
        ]

    def exec_prefix(self, env: dict[str, str] | None) -> list[str]:
        """`<runtime> exec --env K=V ...`: shared by every runtime's exec_argv."""
        out = [*self.base(), "exec"]
        for k, v in (env or {}).items():
            out += ["--env", f"{k}={v}"]
        return out

    def exec_argv(
        self, cid: str, argv: list[str], env: dict[str, str] | None, pid_file: str | None
    ) -> list[str]:
        out = self.exec_prefix(env)
        if pid_file:
            out += ["--pid-file", pid_file]
        return [*out, cid, *argv]

    def state(self, cid: str) -> dict:
        r = subprocess.run([*self.base(), "state", cid], capture_output=True, text=True)
        if r.returncode != 0:
            return {}
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {}

    def delete(self, cid: str) -> None:
        """Kill and delete the container; no error if it is already gone."""
        subprocess.run([*self.base(), "kill", cid, "KILL"], capture_output=True, timeout=30)
        subprocess.run([*self.base(), "delete", "--force", cid], capture_output=True, timeout=30)

    def release_root(self) -> list[str]:
        """Once no container of this runtime is left, unmount what the runtime itself mounted
        in virtbench's root for it (current runsc bind-mounts a null-netns there and keeps it
        after its last container): the mount points removed."""
        if self.list_ids():
            return []
        mounts = storage.mounts_under(self.root)
        for mnt in mounts:
            storage.umount(mnt)
        return mounts

    def plug(self, cid: str) -> tuple[str | None, hostnet.Attachment | None]:
        """The container's network besides the host's: (netns path for config.json, its
        attachment to the bridge). Default: a netns of virtbench's with a veth in it."""
        if self.network == "host":
            return None, None
        netns = hostnet.create_netns(cid)
        return netns, hostnet.attach_netns(cid, cid)

    def prepare_instance(self, cid: str, storage: str, offset: int) -> None:
        """Engine objects of container `cid` made before `run_argv` (default: none)."""

    def endpoint(self, cid: str, port: int) -> tuple[str, int] | None:
        """Where a host client reaches `port`, if the engine decides (default: the platform)."""
        return None

    def server_ports(self, cid: str) -> list[int] | None:
        """The ports a server inside may use, if the engine limits them (default: any)."""
        return None

    def after_start(self, cid: str) -> None:
        """Checks once the container runs (default: none)."""

    def populate(self, host_path: Callable[[str], Path]) -> None:
        """Put what the runtime needs inside a provisioned container's root (default: none)."""

    def labels(self) -> dict[str, Any]:
        """Facts about how this runtime runs the tools, stored with every cell."""
        return {}

    def engine(self, cid: str | None) -> dict[str, str]:
        """The engine's effective configuration for container `cid` (None: not running), as
        the engine reports it (platforms/engine_config.py); {} where virtbench reads none."""
        return {}

    def direct_io(self, storage: str) -> str:
        """How O_DIRECT on the container's data path (overlay or volume) reaches the host
        filesystem: a kernel overlay or bind mount passes the flag to the file below."""
        return directio.HONOURED

    def list_ids(self) -> list[str]:
        if not self.root.is_dir() or tools.which(self.binary) is None:
            return []
        # state dirs are named after the container id in every runtime's root
        return sorted(p.name for p in self.root.iterdir() if p.name.startswith(NAME_PREFIX))


class Crun(OciRuntime):
    name = binary = "crun"

    def prepare(self) -> None:
        super().prepare()
        ensure_hybrid_hugetlb()


class Runc(OciRuntime):
    name = binary = "runc"


class Runsc(OciRuntime):
    """gVisor: a user-space kernel. No usable KVM here: ptrace (Debian's) or systrap.
    `build`: Debian's runsc or a release built from gVisor's Go module (gvisor_build.py)."""

    name = binary = "runsc"
    joins_netns = False  # HOST-NOTES: joining a pre-made netns fails on these hosts

    def __init__(self, network: str = "host", build: str = gvisor_build.DEBIAN) -> None:
        super().__init__(network)
        self.build = build

    @property
    def root(self) -> Path:
        # each build keeps its own state: one release does not read another's state files
        if self.build == gvisor_build.DEBIAN:
            return STATE_ROOT / self.name
        return STATE_ROOT / f"{self.name}-{self.build}"

    def executable(self) -> str:
        if self.build == gvisor_build.DEBIAN:
            return self.binary
        path = gvisor_build.built(self.build)
        if path is None:
            raise PlatformError(
                f'runsc = "{self.build}" is not built: `virtbench run` builds it at a'
                " platform's start (or `virtbench setup --step gvisor` for the pinned one)"
            )
        return str(path)

    def prepare(self) -> None:
        if self.build == gvisor_build.DEBIAN:
            super().prepare()
            return
        gvisor_build.ensure(self.build, log=lambda m: print(m, flush=True))
        self.root.mkdir(parents=True, exist_ok=True)

    def base(self) -> list[str]:
        net = "host" if self.network == "host" else "sandbox"
        # Debian's release: ptrace (its default; KVM is unusable here). A current build runs
        # its own default, what its users run (systrap since 2023); the engine label says
        platform = ["--platform=ptrace"] if self.build == gvisor_build.DEBIAN else []
        return [self.executable(), "--root", str(self.root), *platform, f"--network={net}"]

    @property
    def version(self) -> str | None:
        """The release: the module version of a build (it reports none), else Debian's."""
        if self.build != gvisor_build.DEBIAN:
            return f"go {self.build}"
        return tools.version(self.binary)

    @property
    def needs_read_shim(self) -> bool:
        return self.network == "host"  # gvisor.py: hostinet's read(2) does not block

    def populate(self, host_path):
        if self.needs_read_shim:
            gvisor.install_shim(host_path)

    def list_ids(self) -> list[str]:
        if self.build == gvisor_build.DEBIAN:
            return super().list_ids()
        if not self.root.is_dir() or gvisor_build.built(self.build) is None:
            return []
        return sorted(p.name for p in self.root.iterdir() if p.name.startswith(NAME_PREFIX))

    def labels(self):
        out = {"read_shim": gvisor.SHIM_LABEL} if self.needs_read_shim else {}
        if self.build != gvisor_build.DEBIAN:  # Debian's version is tools.version's
            out |= {"runsc_build": self.build, "runtime_version": self.version}
        return out

    def engine(self, cid):
        found = gvisor.effective_config(self.base())
        return found | {"build": self.build} if found else {}

    def direct_io(self, storage: str) -> str:
        try:  # this build's own mechanism (a build not made yet: the generic reason)
            config = gvisor.effective_config(self.base())
        except PlatformError:
            config = {}
        return directio.cached(gvisor.direct_io_mechanism(storage, self.version, config))

    def exec_argv(self, cid, argv, env, pid_file):
        if self.needs_read_shim and argv and Path(argv[0]).name in gvisor.SHIM_TOOLS:
            env = {**(env or {}), "LD_PRELOAD": gvisor.SHIM_INSIDE}
        out = [*self.base(), "exec"]
        for k, v in (env or {}).items():
            out += ["-env", f"{k}={v}"]
        if pid_file:
            out += ["-pid-file", pid_file]
        return [*out, cid, *argv]

    def run_argv(self, cid, bundle, detach):
        return [*self.base(), "run", *(["-detach"] if detach else []), "-bundle", str(bundle), cid]


_CLASSES: dict[str, type[OciRuntime]] = {"crun": Crun, "runc": Runc, "runsc": Runsc}


def get(
    name: str, network: str = "host", nat: str | None = None, runsc: str = gvisor_build.DEBIAN
) -> OciRuntime:
    if name == "podman":  # an engine, not an OCI runtime: its own module
        from .podman import Podman

        return Podman(network)
    if name == "lxc":
        from .lxc import Lxc

        return Lxc(network)
    if name == "docker":  # so is docker; `nat`: its docker_nat option
        from .docker import Docker

        return Docker(network, nat)
    if name not in _CLASSES:
        raise PlatformError(f"unknown container runtime {name!r}; allowed: {', '.join(RUNTIMES)}")
    if name == "runsc":
        return Runsc(network, runsc)
    return _CLASSES[name](network)


def every() -> list[OciRuntime]:
    """Every runtime whose containers the cleaner looks for: one per name, and one per
    gVisor build that has a state root here (each build keeps its own)."""
    out = [get(name) for name in RUNTIMES]
    prefix = "runsc-"
    if STATE_ROOT.is_dir():
        for d in sorted(STATE_ROOT.iterdir()):
            build = d.name[len(prefix) :]
            if d.name.startswith(prefix) and gvisor_build.PSEUDO_VERSION.match(build):
                out.append(Runsc("host", build))
    return out


def ensure_hybrid_hugetlb(root: Path = Path("/sys/fs/cgroup")) -> bool:
    """crun refuses hybrid cgroups ("cgroups in hybrid mode not supported") unless a v1
    hugetlb hierarchy is mounted; mount it once if missing. Returns True if it mounted."""
    if hostinfo.cgroup_version() != "v1" or not (root / "unified").is_dir():
        return False
    mountinfo = Path("/proc/self/mountinfo").read_text()
    if any(" - cgroup " in ln and "hugetlb" in ln.split(" - ")[1] for ln in mountinfo.splitlines()):
        return False
    target = root / "hugetlb"
    with contextlib.suppress(FileExistsError):
        target.mkdir()
    r = subprocess.run(
        ["mount", "-t", "cgroup", "-o", "hugetlb", "cgroup", str(target)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise PlatformError(
            f"crun needs a cgroup v1 hugetlb hierarchy on this hybrid-cgroup host and "
            f'mounting it at {target} failed: {r.stderr.strip()}; use runtime = "runc"'
        )
    return True
