"""Docker as a container engine (`runtime = "docker"`), driven through its command line.

The container runs from the shared root filesystem imported once as a Docker image
(`vb-rootfs:<rootfs key>`, re-imported only when the key changes), so binaries are the same
as on every other platform; its root is Docker's overlay2 copy-on-write layer (`storage =
"overlay"`, seed 004's AUFS role) and `storage = "volume"` mounts a Docker volume named after
the instance at the data path. `network = "host"` shares the host's; "bridge" and "nat" attach
to one user-defined Docker network (NETWORK), "nat" publishing a block of ports with `-p` on
127.0.0.1 through docker-proxy or iptables DNAT (`docker_nat`, a daemon-wide setting:
dockerd.py). Limits, capabilities, ulimits and the exec pid files are podman's translation of
the same OCI config (podman.run_flags); exec goes through `docker exec`.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import cleanup
from ...errors import PlatformError
from ...filelock import file_lock
from ...images import rootfs
from ...ports import PORT_HIGH, PORT_LOW, port_free_on_host
from .. import engine_config
from ..base import NAME_PREFIX
from . import dockerd
from .podman import PID_DIR, Podman, run_flags
from .storage import DATA_PATH

IMAGE_REPO = NAME_PREFIX + "rootfs"
NETWORK = NAME_PREFIX + "docker"
LABEL = "org.virtbench"  # on every container, network, volume and image virtbench makes
PORT_BLOCK = 8  # ports published per nat container (docker cannot publish after `run`)


def image_ref(key: str) -> str:
    return f"{IMAGE_REPO}:{key}"


def nat_flags(
    inner_base: int, host_base: int, count: int = PORT_BLOCK, bind: str = "127.0.0.1"
) -> list[str]:
    """`-p` flags publishing inner ports [inner_base, +count) on `bind` (pure; the host's
    loopback, or a VM guest's own address where the host reaches it)."""
    hi, ci = host_base + count - 1, inner_base + count - 1
    return [
        flag
        for proto in ("tcp", "udp")
        for flag in ("--publish", f"{bind}:{host_base}-{hi}:{inner_base}-{ci}/{proto}")
    ]


def docker_run_flags(
    config: dict[str, Any],
    *,
    network: str,
    image: str,
    pids_dir: str,
    volume: str | None,
    ports: tuple[int, int] | None,
    bind: str = "127.0.0.1",
) -> list[str]:
    """Everything of `docker run` after `run` (pure: unit-tested). `ports`: (inner base, host
    base) of the published block for nat, published on `bind`."""
    flags = ["--label", f"{LABEL}=1", "--log-driver", "none"]
    flags += run_flags(config, network=False)
    flags += ["--network", "host" if network == "host" else NETWORK]
    if ports is not None:
        flags += nat_flags(*ports, bind=bind)
    if volume is not None:
        flags += ["--mount", f"type=volume,source={volume},target={DATA_PATH}"]
    flags += ["--volume", f"{pids_dir}:{PID_DIR}:rw"]
    return [*flags, image, *config["process"]["args"]]


class Docker(Podman):
    """docker run/exec/rm against the daemon dockerd.ensure() picked."""

    name = binary = "docker"
    own_rootfs = True  # the root is Docker's layer over the imported image
    own_network = True  # Docker makes the network namespace and the published ports

    def __init__(self, network: str = "host", nat: str | None = None) -> None:
        super().__init__(network)
        self.nat = nat or dockerd.PROXY
        self._daemon: dockerd.Daemon | None = None
        self._engine: dict[str, str] | None = None  # docker info, read once
        self.image: str | None = None
        self.ports: dict[str, tuple[int, int]] = {}  # container -> (inner base, host base)
        self.offset = 20000
        self.bind = "127.0.0.1"  # where -p publishes (a VM guest: its own address)

    # --- the daemon -----------------------------------------------------------------------
    @property
    def daemon(self) -> dockerd.Daemon | None:
        if self._daemon is None:
            self._daemon = dockerd.current()
        return self._daemon

    def base(self) -> list[str]:
        d = self.daemon
        return [dockerd.cli(), "--host", f"unix://{d.socket if d else dockerd.SOCKET}"]

    def _docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return self._run([*self.base(), *args], timeout)

    def _run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        """Run a docker command where the daemon is (here: the host; guestdocker.py: a VM
        guest through its agent)."""
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def prepare(self) -> None:
        self._daemon = dockerd.ensure(self.nat if self.network == "nat" else None)
        self.image = self._ensure_image()

    def _ensure_image(self) -> str:
        tree = rootfs.rootfs_tree(lambda m: print(m, flush=True))
        ref = image_ref(rootfs.key())
        if self._docker("image", "inspect", ref).returncode == 0:
            return ref
        with file_lock(dockerd.RUN_DIR.parent / ".docker-import.lock"):
            if self._docker("image", "inspect", ref).returncode == 0:
                return ref
            print(f"importing {tree} into Docker as {ref}", flush=True)
            tar = subprocess.Popen(
                ["tar", "-C", str(tree), "--numeric-owner", "-cf", "-", "."],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            r = subprocess.run(
                [*self.base(), "import", "--change", f"LABEL {LABEL}=1", "-", ref],
                stdin=tar.stdout,
                capture_output=True,
                text=True,
                timeout=900,
            )
            tar.stdout.close()  # type: ignore[union-attr]
            tar.wait()
            if r.returncode != 0:
                raise PlatformError(f"docker import of {tree} failed: {r.stderr.strip()[-800:]}")
        return ref

    # --- per container --------------------------------------------------------------------
    def prepare_instance(self, cid: str, storage: str, offset: int) -> None:
        """Network, volume and port block of container `cid` (before `run_argv`)."""
        self.offset = offset
        if self.network != "host":
            self._ensure_network()
        if storage == "volume":
            r = self._docker("volume", "create", "--label", f"{LABEL}={cid}", cid)
            if r.returncode != 0:
                raise PlatformError(f"docker volume create {cid}: {r.stderr.strip()}")
        if self.network == "nat":
            self.ports[cid] = pick_block(offset, free=self._port_free)

    def _port_free(self, port: int) -> bool:
        return port_free_on_host(port)

    def _ensure_network(self) -> None:
        if self._docker("network", "inspect", NETWORK).returncode == 0:
            return
        r = self._docker("network", "create", "--label", f"{LABEL}=1", NETWORK)
        if r.returncode != 0 and "already exists" not in r.stderr:
            raise PlatformError(f"docker network create {NETWORK}: {r.stderr.strip()}")

    def run_argv(self, cid: str, bundle: Path, detach: bool) -> list[str]:
        config = json.loads((bundle / "config.json").read_text())
        pids = bundle / "pids"
        pids.mkdir(exist_ok=True)
        return self.run_command(cid, config, str(pids), detach)

    def run_command(
        self, cid: str, config: dict[str, Any], pids_dir: str, detach: bool
    ) -> list[str]:
        """`docker run` of container `cid` from its OCI config (`pids_dir`: where exec'd
        commands record their pids, as the daemon's side sees it)."""
        if self.image is None:
            self.prepare()
        volume = cid if self._has_volume(cid) else None
        return [
            *self.base(),
            "run",
            *(["--detach"] if detach else []),
            "--name",
            cid,
            *docker_run_flags(
                config,
                network=self.network,
                image=str(self.image),
                pids_dir=pids_dir,
                volume=volume,
                ports=self.ports.get(cid),
                bind=self.bind,
            ),
        ]

    def _has_volume(self, cid: str) -> bool:
        return self._docker("volume", "inspect", cid).returncode == 0

    def inspect(self, cid: str) -> dict:
        r = self._docker("inspect", cid, timeout=60)
        with contextlib.suppress(ValueError, IndexError):
            return json.loads(r.stdout)[0] if r.returncode == 0 else {}
        return {}

    def state(self, cid: str) -> dict:
        pid = self.inspect(cid).get("State", {}).get("Pid")
        return {"pid": int(pid)} if pid else {}

    def delete(self, cid: str) -> None:
        if self.daemon is None:
            return
        self._docker("rm", "--force", "--volumes", cid, timeout=60)
        self._docker("volume", "rm", "--force", cid, timeout=60)
        self.ports.pop(cid, None)
        # the shared network goes with its last container (fails while others use it)
        self._docker("network", "rm", NETWORK, timeout=60)

    def list_ids(self) -> list[str]:
        if self.daemon is None:
            return []
        r = self._docker(
            "ps", "--all", "--filter", f"label={LABEL}", "--format", "{{.Names}}", timeout=60
        )
        return sorted(n for n in r.stdout.split() if n.startswith(NAME_PREFIX))

    # --- what the platform asks --------------------------------------------------------------
    def endpoint(self, cid: str, port: int) -> tuple[str, int] | None:
        if self.network == "host":
            return None  # the platform's own answer: 127.0.0.1
        if self.network == "bridge":
            return (self.address(cid), port)
        inner, host = self.ports[cid]
        if not inner <= port < inner + PORT_BLOCK:
            raise PlatformError(
                f"docker nat publishes ports {inner}..{inner + PORT_BLOCK - 1} of container "
                f"{cid} at `docker run` (Docker cannot publish later); port {port} is not one"
            )
        return ("127.0.0.1", host + port - inner)

    def server_ports(self, cid: str) -> list[int] | None:
        """Ports a server inside should pick (nat: the published block, shuffled)."""
        if cid not in self.ports:
            return None
        inner = self.ports[cid][0]
        ports = list(range(inner, inner + PORT_BLOCK))
        random.shuffle(ports)
        return ports

    def address(self, cid: str) -> str:
        nets = self.inspect(cid).get("NetworkSettings", {}).get("Networks", {})
        addr = nets.get(NETWORK, {}).get("IPAddress")
        if not addr:
            raise PlatformError(f"docker container {cid} has no address on {NETWORK}")
        return addr

    def host_path(self, cid: str, path: str) -> Path:
        """Where `path` inside the running container is on the host (to copy files in)."""
        if (path + "/").startswith(DATA_PATH + "/") and self._has_volume(cid):
            r = self._docker("volume", "inspect", "--format", "{{.Mountpoint}}", cid)
            return Path(r.stdout.strip()) / Path(path).relative_to(DATA_PATH)
        merged = self.inspect(cid).get("GraphDriver", {}).get("Data", {}).get("MergedDir")
        if not merged:
            raise PlatformError(f"docker container {cid}: no overlay2 MergedDir to copy into")
        return Path(merged) / path.lstrip("/")

    def host_ifaces(self, cid: str) -> list[str]:
        """The host end of the container's veth (bridge and nat)."""
        if self.network == "host":
            return []
        r = self._docker("exec", cid, "cat", "/sys/class/net/eth0/iflink", timeout=30)
        index = r.stdout.strip()
        for link in Path("/sys/class/net").iterdir():
            with contextlib.suppress(OSError):
                if (link / "ifindex").read_text().strip() == index:
                    return [link.name]
        return []

    def after_start(self, cid: str) -> None:
        """The data path in the container's own layer (the image has none; crun makes it in
        its upper layer), and ports published the way the label will say: docker-proxy
        processes for this container's block exactly when the daemon uses the userland proxy."""
        r = self._docker("exec", cid, "mkdir", "-p", DATA_PATH, timeout=60)
        if r.returncode != 0:
            raise PlatformError(f"docker exec {cid} mkdir {DATA_PATH}: {r.stderr.strip()}")
        if cid not in self.ports or self.daemon is None:
            return
        host = self.ports[cid][1]
        proxies = self._proxy_ports()
        seen = any(host <= p < host + PORT_BLOCK for p in proxies)
        if seen != self.daemon.userland_proxy:
            raise PlatformError(
                f"docker_nat: the daemon was asked for {self.daemon.nat_mode} but docker-proxy "
                f"processes for ports {host}.. are {'present' if seen else 'absent'}"
            )

    def _proxy_ports(self) -> list[int]:
        return proxy_ports()

    def labels(self) -> dict[str, Any]:
        d = self.daemon
        out: dict[str, Any] = {"runtime_version": daemon_version(self) if d else None}
        out["docker_daemon"] = None if d is None else ("virtbench" if d.owned else "user")
        if self.network == "nat" and d is not None:
            out["docker_nat"] = d.nat_mode
        return out

    def engine(self, cid: str | None) -> dict[str, str]:
        # docker info once per engine object: the daemon's settings do not change under us
        if self._engine is None and self.daemon is not None:
            r = self._docker("info", "--format", "{{json .}}", timeout=30)
            try:
                info = json.loads(r.stdout) if r.returncode == 0 else None
            except ValueError:
                info = None
            if isinstance(info, dict):
                proxy = self.daemon.userland_proxy
                self._engine = engine_config.docker_config(info, proxy)
        return self._engine or {}


def daemon_version(engine: Docker) -> str | None:
    r = engine._docker("version", "--format", "{{.Server.Version}}", timeout=30)
    return r.stdout.strip() or None if r.returncode == 0 else None


def pick_block(
    offset: int, rng: random.Random | None = None, free: Callable[[int], bool] | None = None
) -> tuple[int, int]:
    """(inner base, host base) of PORT_BLOCK ports whose host side is free for TCP and UDP
    (`free`: the test, default this host's)."""
    rng = rng or random.Random()
    free = free or port_free_on_host
    for _ in range(200):
        inner = rng.randrange(PORT_LOW, PORT_HIGH - PORT_BLOCK)
        if all(free(inner + offset + i) for i in range(PORT_BLOCK)):
            return inner, inner + offset
    raise PlatformError(
        f"no block of {PORT_BLOCK} free host ports in {PORT_LOW + offset}..{PORT_HIGH + offset}"
        " to publish (publish_port_offset)"
    )


def proxy_ports() -> list[int]:
    """Host ports that docker-proxy processes listen on."""
    cmdlines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                args = (entry / "cmdline").read_bytes().split(b"\0")
                cmdlines.append([a.decode(errors="replace") for a in args])
    return ports_of_proxies(cmdlines)


def ports_of_proxies(cmdlines: list[list[str]]) -> list[int]:
    """The `-host-port` of every docker-proxy command line (pure: unit-tested)."""
    ports = []
    for args in cmdlines:
        if args and args[0].endswith("docker-proxy") and "-host-port" in args[:-1]:
            with contextlib.suppress(ValueError):
                ports.append(int(args[args.index("-host-port") + 1]))
    return ports


@cleanup.register("docker")
def clean() -> list[str]:
    """Containers of dead runs, virtbench's unused network, volumes and stale images on
    whatever daemon runs; then virtbench's dockerd if no virtbench process uses it, and what
    a stopped one of ours left (a mounted namespace, iptables chains)."""
    removed: list[str] = []
    engine = Docker()
    if engine.daemon is None:
        for claim in dockerd.dead_claims():
            claim.unlink(missing_ok=True)
        return dockerd.leftovers()  # what ours left if it died
    for cid in engine.list_ids():
        state = cleanup.owner(cid)
        if state == cleanup.NO_RECORD:
            removed.append(cleanup.left_alone(f"docker container {cid}"))
        if state == cleanup.DEAD:
            before = cleanup.processes_in_cgroup(cid)
            engine.delete(cid)
            removed.extend(cleanup.ended(before, f"docker container {cid}"))
            removed.append(f"docker container {cid}")
    r = engine._docker("volume", "ls", "--quiet", "--filter", f"label={LABEL}")
    for vol in r.stdout.split():
        ours = vol.startswith(NAME_PREFIX) and cleanup.owner(vol) == cleanup.DEAD
        if ours and engine._docker("volume", "rm", vol).returncode == 0:
            removed.append(f"docker volume {vol}")
    unused = not engine.list_ids()
    if unused and engine._docker("network", "inspect", NETWORK).returncode == 0:  # noqa: SIM102
        if engine._docker("network", "rm", NETWORK).returncode == 0:
            removed.append(f"docker network {NETWORK}")
    current = image_ref(rootfs.key())
    r = engine._docker("images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE_REPO)
    for ref in r.stdout.split():
        if ref != current and engine._docker("rmi", ref).returncode == 0:
            removed.append(f"docker image {ref} (stale root filesystem)")
    for claim in dockerd.dead_claims():  # processes that used our daemon and died
        claim.unlink(missing_ok=True)
    if engine.daemon.owned and not dockerd._live_claims() and dockerd.stop():
        removed.append(f"virtbench's dockerd ({dockerd.SOCKET})")
    return removed + dockerd.leftovers()  # nothing while ours runs
