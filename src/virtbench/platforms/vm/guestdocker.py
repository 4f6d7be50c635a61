"""Docker inside a VM guest (container@vm with `runtime = "docker"`).

The host's Docker engine code one layer deeper: `GuestDocker` is docker.py's `Docker` with
every docker command sent through the guest agent (its `_run`), so the `docker run` flags
(podman's translation of the same OCI config), the published port block, the vb-docker
network, volumes, inspect and removal are the host's code. The daemon is the guest's own:
virtbench starts one dockerd per guest (dockerd.daemon_argv with guest paths: cgroupfs
driver, overlay2 - vfs where the guest kernel has no overlayfs -, no docker0, the guest's
iptables for published ports), imports the guest's root filesystem (the shared tree the VM
image was made from) as `vb-rootfs:<rootfs key>`, and stops it when the VM tears down
(`VmPlatform.on_teardown`). What it made lives in the guest's /run and on the VM's private
disk overlay, both gone with the VM: nothing of it is on the host.

Under TCG dockerd and containerd start slowly: START_TIMEOUT_S is generous and recorded
(label `docker_start_timeout_s`), and a daemon that exits or does not answer in time fails
with the tail of its log.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import time
from typing import TYPE_CHECKING, Any

from ...errors import PlatformError
from ..base import ExecResult
from ..container import dockerd
from ..container.docker import LABEL, NETWORK, Docker, image_ref, ports_of_proxies
from .modules import DOCKER_MODULES

if TYPE_CHECKING:
    from .platform import VmPlatform

GUEST_RUN = "/run/vb/docker"  # tmpfs: socket, pid, log, exec root, facts
PATHS = dockerd.DaemonPaths(
    socket=f"{GUEST_RUN}/docker.sock",
    data_root="/var/lib/vb-docker",  # on the VM's disk (its private qcow2 overlay)
    exec_root=f"{GUEST_RUN}/exec",
    pidfile=f"{GUEST_RUN}/dockerd.pid",
)
LOG = f"{GUEST_RUN}/dockerd.log"
FACTS = f"{GUEST_RUN}/facts"  # key=value lines: what every container of this guest reports
START_TIMEOUT_S = 600.0  # TCG: dockerd + containerd take tens of seconds (docs/container-in-vm.md)
IMPORT_TIMEOUT_S = 1800.0
STOP_TIMEOUT_S = 30.0
CLI = ["docker", "--host", f"unix://{PATHS.socket}"]
# what the import leaves out of the guest's root: Docker's own data, crun containers' dirs,
# the VM's work directories, ext4's lost+found (the image is the tree, not the running guest)
IMPORT_EXCLUDES = (
    PATHS.data_root,
    "/var/lib/vb-containers",
    "/var/tmp/vb-*",
    "/lost+found",
)


def _sh(vm: VmPlatform, script: str, *args: str, timeout: float, what: str) -> ExecResult:
    r = vm.exec(["sh", "-c", script, "sh", *args], timeout=timeout)
    if not r.ok:
        tail = (r.stderr or r.stdout).strip()[-800:]
        raise PlatformError(f"docker in the guest of '{vm.name}': {what} failed: {tail}")
    return r


def storage_driver(filesystems: str) -> str:
    """overlay2 where the guest kernel offers overlayfs (/proc/filesystems), else vfs (a full
    copy per container: slower to start, no copy-on-write). Pure: unit-tested."""
    names = {line.split()[-1] for line in filesystems.splitlines() if line.strip()}
    return "overlay2" if "overlay" in names else "vfs"


def start_script() -> str:
    """Start the argv given as arguments in the background, log to LOG, print its pid."""
    return (
        f'set -e; mkdir -p {GUEST_RUN} {PATHS.data_root}\n"$@" > {LOG} 2>&1 < /dev/null &\necho $!'
    )


def answer_script(pid: int) -> str:
    """Exit 3 if dockerd `pid` is gone, else print the server version if it answers."""
    cli = " ".join(CLI)
    return (
        f"kill -0 {pid} 2>/dev/null || exit 3\n"
        f"{cli} version --format '{{{{.Server.Version}}}}' 2>/dev/null"
    )


def import_script(ref: str) -> str:
    """tar the guest's root (this filesystem only) into `docker import`; fails if either
    fails (tar's 1, "file changed as we read it", is only a warning)."""
    excludes = " ".join(f"--exclude={shlex.quote('.' + p)}" for p in IMPORT_EXCLUDES)
    cli = " ".join(CLI)
    return (
        f"set -e; rc={GUEST_RUN}/tar.rc\n"
        f"{{ tar -C / --one-file-system --numeric-owner {excludes} -cf - . ; echo $? > $rc; }}"
        f" | {cli} import --change 'LABEL {LABEL}=1' - {shlex.quote(ref)}\n"
        '[ "$(cat $rc)" -le 1 ]'
    )


def stop_script() -> str:
    """Remove virtbench's containers, volumes and network, then stop dockerd (TERM, then
    KILL after STOP_TIMEOUT_S). Never fails."""
    cli = " ".join(CLI)
    steps = int(STOP_TIMEOUT_S * 10)
    return "\n".join(
        [
            f"pid=$(cat {PATHS.pidfile} 2>/dev/null) || exit 0",
            f"ids=$({cli} ps -aq --filter label={LABEL} 2>/dev/null)",
            f'[ -n "$ids" ] && {cli} rm -f -v $ids >/dev/null 2>&1',
            f"{cli} volume ls -q --filter label={LABEL} 2>/dev/null | "
            f"xargs -r {cli} volume rm -f >/dev/null 2>&1",
            f"{cli} network rm {NETWORK} >/dev/null 2>&1",
            'kill -TERM "$pid" 2>/dev/null',
            f'for i in $(seq {steps}); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done',
            'kill -KILL "$pid" 2>/dev/null; exit 0',
        ]
    )


def parse_facts(text: str) -> dict[str, Any]:
    """The FACTS file: key=value lines, the last one of a key wins (a restarted daemon
    appends its own); numbers become floats (pure: unit-tested)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        try:
            out[key.strip()] = float(value)
        except ValueError:
            out[key.strip()] = value.strip()
    return out


class GuestDocker(Docker):
    """docker run/exec/rm against the dockerd virtbench runs inside `vm`'s guest."""

    def __init__(self, vm: VmPlatform, network: str = "host", nat: str | None = None) -> None:
        super().__init__(network, nat)
        self.vm = vm

    # --- where commands run -----------------------------------------------------------------
    def base(self) -> list[str]:
        return list(CLI)

    def _run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        r = self.vm.exec(argv, timeout=timeout)
        return subprocess.CompletedProcess(argv, r.returncode, r.stdout, r.stderr)

    @property
    def daemon(self) -> dockerd.Daemon | None:
        return self._daemon  # set by prepare(); never the host's daemon

    def _port_free(self, port: int) -> bool:
        return port <= 65535  # nothing else in the guest publishes ports

    def _proxy_ports(self) -> list[int]:
        r = self.vm.exec(["pgrep", "-a", "docker-proxy"], timeout=30)
        return ports_of_proxies([line.split()[1:] for line in r.stdout.splitlines()])

    # --- the daemon and the image -------------------------------------------------------------
    def prepare(self) -> None:
        self._daemon = ensure_daemon(self.vm, self.nat if self.network == "nat" else None)
        self.image = self._ensure_image()

    def _ensure_image(self) -> str:
        ref = image_ref(str(self.vm.facts.get("rootfs_key")))
        if self._docker("image", "inspect", ref).returncode == 0:
            if "docker_image" not in self.guest_facts():  # dockerseed.py put it there
                _sh(
                    self.vm,
                    f"echo docker_image=seeded >> {FACTS}",
                    timeout=30,
                    what="recording where the image came from",
                )
            return ref
        print(f"importing the guest's root filesystem into Docker in '{self.vm.name}' as {ref}")
        t0 = time.monotonic()
        _sh(self.vm, import_script(ref), timeout=IMPORT_TIMEOUT_S, what="docker import")
        _sh(
            self.vm,
            f'printf "docker_image=imported\\ndocker_import_s=%s\\n" "$1" >> {FACTS}',
            f"{time.monotonic() - t0:.1f}",
            timeout=30,
            what="recording the import time",
        )
        return ref

    def guest_facts(self) -> dict[str, Any]:
        r = self.vm.exec(["cat", FACTS], timeout=30)
        return parse_facts(r.stdout) if r.ok else {}

    def labels(self) -> dict[str, Any]:
        return {
            **super().labels(),
            **{k: v for k, v in self.guest_facts().items() if k != "docker_nat_mode"},
            "docker_daemon": "virtbench (in the guest)",
            "docker_start_timeout_s": START_TIMEOUT_S,
        }


# --- the guest's dockerd -------------------------------------------------------------------------
def _answers(vm: VmPlatform) -> bool:
    r = vm.exec([*CLI, "version", "--format", "{{.Server.Version}}"], timeout=60)
    return r.ok and bool(r.stdout.strip())


def _mode(vm: VmPlatform) -> str | None:
    facts = parse_facts(vm.exec(["cat", FACTS], timeout=30).stdout)
    mode = facts.get("docker_nat_mode")
    return str(mode) if mode else None


def ensure_daemon(vm: VmPlatform, nat_mode: str | None) -> dockerd.Daemon:
    """The guest's dockerd, started (or restarted with the other userland-proxy setting when
    no container runs on it) so that it publishes ports the way `nat_mode` says."""
    running = _answers(vm)
    current = _mode(vm) if running else None
    want = (nat_mode or current or dockerd.PROXY) == dockerd.PROXY
    if running and current is not None and (current == dockerd.PROXY) != want:
        r = vm.exec([*CLI, "ps", "-aq"], timeout=60)
        if r.stdout.split():
            raise PlatformError(
                f"docker_nat = {nat_mode!r}: the dockerd in the guest of '{vm.name}' runs with "
                f"{current} for another container; the setting is daemon-wide, so containers "
                "with different docker_nat cannot share one VM at the same time"
            )
        vm.exec(["sh", "-c", stop_script()], timeout=STOP_TIMEOUT_S + 60)
        running = False
    if not running:
        start(vm, want)
    vm.on_teardown("docker", lambda: stop(vm))
    return dockerd.Daemon(PATHS.socket, True, want)


def start(vm: VmPlatform, userland_proxy: bool, timeout: float = START_TIMEOUT_S) -> None:
    vm.load_modules(DOCKER_MODULES)
    fs = vm.exec(["cat", "/proc/filesystems"], timeout=30).stdout
    driver = storage_driver(fs)
    argv = dockerd.daemon_argv(userland_proxy, PATHS, storage_driver=driver, ip_forward=True)
    t0 = time.monotonic()
    started = _sh(vm, start_script(), *argv, timeout=60, what="starting dockerd")
    pid = int(started.stdout.split()[-1])
    deadline = t0 + timeout
    why = "did not answer"
    while True:
        r = vm.exec(["sh", "-c", answer_script(pid)], timeout=60)
        if r.returncode == 3:
            why = "exited"
            break
        if r.ok and r.stdout.strip():
            took = time.monotonic() - t0
            mode = dockerd.PROXY if userland_proxy else dockerd.IPTABLES
            _sh(
                vm,
                f"printf 'docker_start_s=%s\\ndocker_storage_driver=%s\\ndocker_nat_mode=%s\\n'"
                f' "$1" "$2" "$3" >> {FACTS}',
                f"{took:.1f}",
                driver,
                mode,
                timeout=30,
                what="recording the daemon's facts",
            )
            return
        if time.monotonic() > deadline:
            break
        time.sleep(1.0)
    tail = vm.exec(["tail", "-n", "20", LOG], timeout=30).stdout.strip() or "(empty log)"
    with contextlib.suppress(PlatformError):
        vm.exec(["kill", "-KILL", str(pid)], timeout=30)
    raise PlatformError(
        f"dockerd in the guest of '{vm.name}' {why} within {timeout:.0f}s of "
        f"`{' '.join(argv)}`; its log ({LOG} in the guest):\n{tail}"
    )


def stop(vm: VmPlatform) -> None:
    """Containers, volumes, network and dockerd of the guest (VM teardown). The imported image
    stays in the data root on the VM's private disk overlay, which teardown deletes."""
    vm.exec(["sh", "-c", stop_script()], timeout=STOP_TIMEOUT_S + 60)
