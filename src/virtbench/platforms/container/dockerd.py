"""The Docker daemon virtbench talks to: the user's, when one answers on the default socket
(used as it is, never stopped), else virtbench's own, started on demand and stopped when the
last virtbench process using it ends.

Ours keeps everything under virtbench's roots (data root DATA_ROOT, so the imported image
survives between runs; socket, pid file, log and containerd under RUN_DIR), uses the cgroupfs
driver (no systemd on these hosts) and overlay2, makes no docker0 (`--bridge=none`: our
containers use one user-defined network) and never touches the host's forwarding policy
(`--ip-forward=false`: dockerd would set FORWARD to DROP on a host with forwarding off, and
other vb- bridges forward through it; published ports reach containers without forwarding).

`--userland-proxy` is a daemon-wide setting, so it is what a `docker_nat` platform asks for:
our daemon is restarted with the other setting when no virtbench container runs on it; the
user's daemon is only read (its command line and daemon.json) and a mismatch is an error.

A dockerd that exits leaves two things behind: the host network namespace it bind-mounts at
EXEC_ROOT/netns/default, and its iptables chains (DOCKER, DOCKER-USER, ... and the jumps into
them from FORWARD, PREROUTING, OUTPUT). Stopping ours removes both (leftovers()); the chains
only when ours made them (CHAINS_MARK: they did not exist when it started) and no other
dockerd runs, since a user's daemon, running or stopped, keeps its own rules there.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ... import cleanup, doctor_registry, tools
from ...doctor_registry import Check
from ...errors import PlatformError
from ...filelock import file_lock
from ..base import NAME_PREFIX
from . import storage

USER_SOCKET = "/var/run/docker.sock"
RUN_DIR = Path("/run/virtbench/docker")
DATA_ROOT = Path("/var/lib/virtbench/docker")
SOCKET = RUN_DIR / "docker.sock"
PID_FILE = RUN_DIR / "dockerd.pid"
LOG_FILE = RUN_DIR / "dockerd.log"
MODE_FILE = RUN_DIR / "userland-proxy"  # what our running daemon was started with
EXEC_ROOT = RUN_DIR / "exec"
CHAINS_MARK = RUN_DIR / "iptables-chains"  # present: Docker's iptables chains are our daemon's
# the iptables chains a dockerd makes at start and leaves when it exits, per table
CHAINS = {
    "filter": ("DOCKER", "DOCKER-ISOLATION-STAGE-1", "DOCKER-ISOLATION-STAGE-2", "DOCKER-USER"),
    "nat": ("DOCKER",),
}
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
CLAIM_PREFIX = NAME_PREFIX + "dockerd-"  # one claim per virtbench process using our daemon
PROXY = "userland-proxy"
IPTABLES = "iptables"
NAT_MODES = (PROXY, IPTABLES)


@dataclass(frozen=True)
class Daemon:
    socket: str
    owned: bool  # started by virtbench (and stopped by it)
    userland_proxy: bool

    @property
    def nat_mode(self) -> str:
        return PROXY if self.userland_proxy else IPTABLES


def cli() -> str:
    """The docker client shipped with the daemon (a newer client elsewhere on PATH speaks a
    newer API; the one beside dockerd always matches it)."""
    dockerd = tools.which("dockerd")
    if dockerd:
        beside = Path(dockerd).parent.parent / "bin" / "docker"
        if beside.exists():
            return str(beside)
    found = tools.which("docker")
    if found is None:
        tools.require(["docker"], needed_by='runtime = "docker"')
    return str(found)


@dataclass(frozen=True)
class DaemonPaths:
    """Where a dockerd started by virtbench keeps its socket and state (strings: a guest's
    dockerd, platforms/vm/guestdocker.py, has paths inside the guest)."""

    socket: str
    data_root: str
    exec_root: str
    pidfile: str


HOST_PATHS = DaemonPaths(str(SOCKET), str(DATA_ROOT), str(RUN_DIR / "exec"), str(PID_FILE))


def daemon_argv(
    userland_proxy: bool,
    paths: DaemonPaths = HOST_PATHS,
    *,
    storage_driver: str = "overlay2",
    ip_forward: bool = False,
) -> list[str]:
    """How virtbench starts its own dockerd (pure: unit-tested). `ip_forward`: only inside a
    VM guest, where the forwarding policy is Docker's alone (iptables DNAT needs it there)."""
    return [
        "dockerd",
        "--host",
        f"unix://{paths.socket}",
        "--data-root",
        paths.data_root,
        "--exec-root",
        paths.exec_root,
        "--pidfile",
        paths.pidfile,
        "--exec-opt",
        "native.cgroupdriver=cgroupfs",
        "--storage-driver",
        storage_driver,
        "--bridge",
        "none",
        f"--ip-forward={'true' if ip_forward else 'false'}",
        f"--userland-proxy={'true' if userland_proxy else 'false'}",
        "--log-level",
        "warn",
    ]


def answers(socket: str, timeout: float = 5.0) -> bool:
    """Whether a daemon answers on `socket` (an API round trip, not just a file)."""
    if not Path(socket).exists():
        return False
    try:
        r = subprocess.run(
            [cli(), "--host", f"unix://{socket}", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and bool(r.stdout.strip())


def own_pid() -> int | None:
    """PID of virtbench's dockerd if it is running."""
    try:
        pid = int(PID_FILE.read_text().strip())
    except (OSError, ValueError):
        return None
    comm = cleanup.command_of(pid) or ""
    return pid if "dockerd" in comm and str(SOCKET) in comm else None


def user_userland_proxy(cmdline: str, daemon_json: str) -> bool:
    """The userland-proxy setting of a daemon we did not start (its flag wins over
    daemon.json; Docker's default is on). Pure: unit-tested."""
    for word in cmdline.split():
        if word.startswith("--userland-proxy"):
            return word.split("=", 1)[-1].lower() not in ("false", "0")
    with contextlib.suppress(ValueError, AttributeError):
        return bool(json.loads(daemon_json or "{}").get("userland-proxy", True))
    return True


def _user_dockerd() -> str | None:
    """The command line of a running dockerd virtbench did not start, None if there is none.
    A zombie is none: ours, stopped after the run that started it died, stays one (named
    `dockerd`, no command line) until whoever inherited it reaps it."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or cleanup.process_state(int(entry.name)) in ("Z", "X"):
            continue
        cmd = cleanup.command_of(int(entry.name)) or ""
        ours = str(SOCKET) in cmd
        if cmd.startswith(("dockerd", "/usr/bin/dockerd", "/usr/sbin/dockerd")) and not ours:
            return cmd
    return None


def _user_daemon() -> Daemon | None:
    if not answers(USER_SOCKET):
        return None
    cmdline = _user_dockerd() or ""
    daemon_json = ""
    with contextlib.suppress(OSError):
        daemon_json = Path("/etc/docker/daemon.json").read_text()
    return Daemon(USER_SOCKET, False, user_userland_proxy(cmdline, daemon_json))


def ensure(nat_mode: str | None = None) -> Daemon:
    """A daemon to use: the user's if one runs, else ours (started or restarted so that its
    userland-proxy setting is `nat_mode`'s; None: whatever runs, else Docker's default)."""
    tools.require(["dockerd"], needed_by='runtime = "docker"')
    user = _user_daemon()
    if user is not None:
        if nat_mode is not None and user.nat_mode != nat_mode:
            raise PlatformError(
                f"docker_nat = {nat_mode!r}: the running dockerd (not started by virtbench, "
                f"socket {USER_SOCKET}) publishes ports with {user.nat_mode}; virtbench does not "
                f"restart a daemon it did not start: use docker_nat = {user.nat_mode!r}, or "
                f"restart dockerd with --userland-proxy={'true' if nat_mode == PROXY else 'false'}"
            )
        return user
    with file_lock(RUN_DIR.parent / ".dockerd.lock"):
        running = own_pid() is not None and answers(str(SOCKET))
        current = _mode_of_running() if running else None
        want = (nat_mode or current or PROXY) == PROXY
        if running and current is not None and (current == PROXY) != want:
            if _others_using() or _containers(str(SOCKET)):
                raise PlatformError(
                    f"docker_nat = {nat_mode!r}: virtbench's dockerd runs with {current} for "
                    "containers of another virtbench run; the setting is daemon-wide, so "
                    "platforms with different docker_nat cannot run side by side"
                )
            stop()
            running = False
        if not running:
            _start(want)
        cleanup.claim(CLAIM_PREFIX + str(os.getpid()))
        if not _atexit_done:
            atexit.register(release)
            _atexit_done.append(True)
    return Daemon(str(SOCKET), True, want)


_atexit_done: list[bool] = []


def _containers(socket: str) -> list[str]:
    r = subprocess.run(
        [cli(), "--host", f"unix://{socket}", "ps", "--all", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.stdout.split()


def _mode_of_running() -> str | None:
    with contextlib.suppress(OSError):
        return MODE_FILE.read_text().strip() or None
    return None


def _others_using() -> bool:
    """Whether another live virtbench process claims our daemon."""
    mine = CLAIM_PREFIX + str(os.getpid())
    return any(c != mine for c in _live_claims())


def _live_claims() -> list[str]:
    if not cleanup.OWNERS_DIR.is_dir():
        return []
    return [
        c.name
        for c in cleanup.OWNERS_DIR.iterdir()
        if c.name.startswith(CLAIM_PREFIX) and cleanup.in_use(c.name)
    ]


def dead_claims() -> list[Path]:
    """Claims on our daemon left by virtbench processes that died without releasing them."""
    if not cleanup.OWNERS_DIR.is_dir():
        return []
    return [
        c
        for c in cleanup.OWNERS_DIR.iterdir()
        if c.name.startswith(CLAIM_PREFIX) and not cleanup.in_use(c.name)
    ]


def _start(userland_proxy: bool) -> None:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    argv = daemon_argv(userland_proxy)
    argv[0] = tools.which("dockerd") or "dockerd"
    if not CHAINS_MARK.exists() and not docker_chains():
        CHAINS_MARK.write_text("Docker's iptables chains were made by virtbench's dockerd\n")
    with open(LOG_FILE, "w") as log:
        # its own session: a Ctrl-C at the terminal must not kill it before we remove our
        # containers (we stop it ourselves, after them)
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    MODE_FILE.write_text(PROXY if userland_proxy else IPTABLES)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if answers(str(SOCKET), timeout=2):
            return
        time.sleep(0.2)
    code = proc.poll()
    _abandon(proc)
    raise PlatformError(start_failure(argv, code, log_tail()))


def _abandon(proc: subprocess.Popen) -> None:
    """A dockerd that failed to start: stopped (SIGTERM, so it takes its containerd down with
    it; SIGKILL if it hangs) and what it left behind removed."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    MODE_FILE.unlink(missing_ok=True)
    leftovers()


def start_failure(argv: list[str], code: int | None, log: str) -> str:
    """Why our dockerd did not come up, with its log (pure: unit-tested)."""
    why = f"exited {code}" if code is not None else f"did not answer within {START_TIMEOUT_S:.0f}s"
    return (
        f'dockerd {why} (started by virtbench for runtime = "docker": `{" ".join(argv)}`);'
        f" its log ({LOG_FILE}):\n{log}"
    )


def log_tail(lines: int = 15) -> str:
    try:
        text = LOG_FILE.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:]) or "(empty log)"


def release() -> None:
    """This process is done with our daemon: stop it if no other virtbench process uses it
    (run at exit, after the platforms' teardown)."""
    cleanup.release(CLAIM_PREFIX + str(os.getpid()))
    with contextlib.suppress(OSError, PlatformError), file_lock(RUN_DIR.parent / ".dockerd.lock"):
        if not _live_claims():
            stop()


def stop() -> bool:
    """Stop virtbench's dockerd (never the user's); True if one was running."""
    pid = own_pid()
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while cleanup.command_of(pid) is not None and cleanup.process_state(pid) not in ("Z", "X"):
        with contextlib.suppress(ChildProcessError):  # ours: reap it, or it stays a zombie
            os.waitpid(pid, os.WNOHANG)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    with contextlib.suppress(ChildProcessError):  # it has exited (or was killed): no wait
        os.waitpid(pid, 0)
    MODE_FILE.unlink(missing_ok=True)
    leftovers()
    return True


def leftovers() -> list[str]:
    """What our dockerd left when it exited (stopped, or died): the mounts under its exec root
    and, where it made them and no other dockerd runs, Docker's iptables chains. A line per
    object removed; nothing while it runs."""
    if own_pid() is not None:
        return []
    removed = []
    for mnt in storage.mounts_under(EXEC_ROOT):
        storage.umount(mnt)
        removed.append(f"mount {mnt} (left by virtbench's dockerd)")
    if CHAINS_MARK.exists() and _user_dockerd() is None:
        for table, rules in docker_chains().items():
            for argv in chain_removal(table, rules):
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    subprocess.run(argv, capture_output=True, timeout=30)
            removed.append(f"iptables {table}: Docker's chains (made by virtbench's dockerd)")
        CHAINS_MARK.unlink(missing_ok=True)
    return removed


def docker_chains() -> dict[str, str]:
    """table -> its `iptables -t TABLE -S` text, for the tables holding any of CHAINS."""
    found = {}
    for table, names in CHAINS.items():
        try:
            r = subprocess.run(
                ["iptables", "-t", table, "-S"], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if any(f"-N {c}" in r.stdout.splitlines() for c in names):
            found[table] = r.stdout
    return found


def chain_removal(table: str, rules: str) -> list[list[str]]:
    """The iptables commands that take Docker's chains out of `table`, from its `-S` text:
    the jumps into them from other chains, then their rules, then the chains (pure)."""
    ours = CHAINS[table]
    present = [c for c in ours if f"-N {c}" in rules.splitlines()]
    jumps = []
    for line in rules.splitlines():
        words = shlex.split(line)
        if len(words) < 2 or words[0] != "-A" or words[1] in ours:
            continue
        target = next(
            (b for a, b in zip(words, words[1:], strict=False) if a in ("-j", "-g")), None
        )
        if target in present:
            jumps.append(["iptables", "-t", table, "-D", *words[1:]])
    flush = [["iptables", "-t", table, "-F", c] for c in present]
    return jumps + flush + [["iptables", "-t", table, "-X", c] for c in present]


def current() -> Daemon | None:
    """The daemon that answers now, without starting one (for cleanup and doctor)."""
    user = _user_daemon()
    if user is not None:
        return user
    if own_pid() is not None and answers(str(SOCKET)):
        return Daemon(str(SOCKET), True, _mode_of_running() != IPTABLES)
    return None


@doctor_registry.register(90, needs_root=True)
def doctor_check() -> Check:
    """Which dockerd virtbench would use (the user's running one, or its own on demand)."""
    if tools.which("dockerd") is None:
        return Check(
            "docker",
            "warn",
            'dockerd not installed: runtime = "docker" platforms fail',
            "apt-get install docker.io",
        )
    d = current()
    if d is None:
        return Check("docker", "ok", "no dockerd running: virtbench starts its own when needed")
    who = "virtbench's" if d.owned else "the user's (used as is, never stopped)"
    return Check("docker", "ok", f"{who} dockerd answers on {d.socket}; -p via {d.nat_mode}")
