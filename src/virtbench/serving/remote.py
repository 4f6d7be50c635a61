"""Load generators on another host (issue 14, seeds 000/003/004 used separate client
machines): a campaign names a client host of an Ansible inventory (`client_host`,
`client_inventory`); the network and web suites then run their clients there over SSH.

Plain `ssh` with a ControlMaster rather than Ansible ad-hoc: a client runs once per sweep
step, and its start must follow the server's readiness closely. One multiplexed SSH channel
costs milliseconds; an ad-hoc Ansible module run costs about a second of Python start-up
and module transfer per call (measured in docs/fleet.md). The inventory is still the
user's: the host's address, port, user, key and SSH arguments come from `ansible-inventory`.

On the client host a small Python wrapper (stdin: one JSON request) pins the tool to the
client CPUs, runs it, reaps it with wait4 (its CPU time: client health is judged there,
with the CPUs the client host gives it), reads that host's /proc/stat for the client CPUs,
and measures the TCP round trip to the target first. Per cell the controller records the
client's clock offset (NTP-style over the SSH channel, min-RTT exchange) and that round trip
in the cell's labels (`client`).
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import os
import re
import shlex
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import safefs
from ..errors import VirtbenchError, WorkloadError
from ..naming import NAME_PREFIX
from ..platforms.base import ExecResult
from ..ports import is_loopback

CONTROL_NAME = f"{NAME_PREFIX}ssh-%C"  # one master per client host, gone 60 s idle
RTT_PORT = 22  # a connect to the target answers (SYN-ACK or RST) after one round trip
CLOCK_EXCHANGES = 7
SSH_FAILED = 255  # ssh's own exit status: the connection, not the command, failed
INVENTORY_ENV = "VIRTBENCH_INVENTORY"  # the client host's inventory, when the campaign has none
# client processes a cell runs on the client host at once, all environments together: each
# is a session of the one SSH connection (ControlMaster), and sshd refuses sessions past its
# MaxSessions (default 10; ssh then falls back to a connection of its own, which starts the
# process late and breaks a step's stagger and lockstep); 2 are left for the cell's clock
# exchange and route lookups. A client host with a higher MaxSessions could take more.
MAX_SESSIONS = 8

# Runs on the client host: request on stdin, one JSON line out. Files named in the request
# are written to a private temporary directory and their paths substituted in argv.
WRAPPER = r"""
import base64, json, os, resource, shutil, signal, socket, subprocess, sys, tempfile, time
req = json.loads(sys.stdin.read())
def stat(cpus):
    out = {}
    for line in open("/proc/stat"):
        f = line.split()
        if f[0].startswith("cpu") and f[0] != "cpu" and int(f[0][3:]) in cpus:
            v = [int(x) for x in f[1:9]]
            out[int(f[0][3:])] = (sum(v) - v[3] - v[4], sum(v))
    return out
def rtt(addr, port):
    best = None
    for _ in range(5):
        t = time.perf_counter()
        try:
            socket.create_connection((addr, port), 2).close()
        except ConnectionRefusedError:
            pass
        except OSError:
            continue
        d = time.perf_counter() - t
        best = d if best is None else min(best, d)
    return best
start = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]
# ownedtmp's naming (PID, start time): `virtbench cleanup` there removes it if we are killed
tmp = tempfile.mkdtemp(prefix="vb-client-%d-%s-" % (os.getpid(), start))
try:
    argv = list(req["argv"])
    for i, (name, data) in req.get("files", {}).items():
        path = os.path.join(tmp, name)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
        argv[int(i)] = path
    cpus = req.get("cpus")
    if cpus:
        os.sched_setaffinity(0, cpus)
    usable = sorted(os.sched_getaffinity(0))
    out = {"rtt_s": rtt(req["target"], req["rtt_port"]) if req.get("target") else None,
           "cpus": usable}
    env = dict(os.environ, **req.get("env", {}))
    before = stat(set(usable))
    t0 = time.time(); m0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    timed_out = False
    try:
        so, se = p.communicate(timeout=req.get("timeout"))
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        so, se = p.communicate()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    after = stat(set(usable))
    shares = [(after[c][0] - before[c][0]) / (after[c][1] - before[c][1])
              for c in before if c in after and after[c][1] > before[c][1]]
    out.update(rc=p.returncode, stdout=so.decode(errors="replace"),
               stderr=se.decode(errors="replace"), elapsed=time.monotonic() - m0,
               started=t0, user=ru.ru_utime, sys=ru.ru_stime, timed_out=timed_out,
               busy=max(shares, default=0.0))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print(json.dumps(out))
"""

CLOCK = r"""
import sys, time
for line in sys.stdin:
    print(repr(time.time()), flush=True)
"""


def control_path() -> str:
    """Where ssh's control sockets live: a directory only this user can enter (root's
    PRIVATE_TMP, a user's ~/.ssh), never a predictable name in /tmp another user could
    pre-bind so that root's ssh talks to their socket."""
    if os.geteuid() == 0:
        return str(safefs.private_tmp() / CONTROL_NAME)
    d = Path.home() / ".ssh"
    d.mkdir(mode=0o700, exist_ok=True)
    return str(d / CONTROL_NAME)


@dataclass
class SshTarget:
    """How to reach an inventory host, as Ansible would (its connection variables)."""

    name: str
    address: str
    port: int | None = None
    user: str | None = None
    key: str | None = None
    args: list[str] = field(default_factory=list)  # ansible_ssh_common_args + extra_args
    python: str = "python3"

    def argv(self, *remote: str) -> list[str]:
        base = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
        base += ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_path()}"]
        base += ["-o", "ControlPersist=60"]
        if self.port:
            base += ["-p", str(self.port)]
        if self.user:
            base += ["-l", self.user]
        if self.key:
            base += ["-i", self.key]
        return [*base, *self.args, self.address, *remote]


def resolve(inventory: Path, name: str, where: str) -> SshTarget:
    """The connection of host `name` from Ansible's own view of `inventory`."""
    from ..fleet import inventory as inv
    from ..fleet.ansible import ansible_env

    every = inv.hosts(inventory)  # also: a missing or unparsable inventory, named
    if name not in every:
        raise VirtbenchError(
            f"{where}: client host {name!r} is not in inventory {inventory};"
            f" it has: {', '.join(every)}"
        )
    r = subprocess.run(
        ["ansible-inventory", "-i", str(inventory), "--host", name],
        capture_output=True,
        text=True,
        env={**os.environ, **ansible_env()},
    )
    if r.returncode != 0:
        raise VirtbenchError(f"{where}: ansible-inventory --host {name}: {r.stderr.strip()}")
    hv = json.loads(r.stdout or "{}")
    args = shlex.split(str(hv.get("ansible_ssh_common_args") or ""))
    args += shlex.split(str(hv.get("ansible_ssh_extra_args") or ""))
    port = hv.get("ansible_port") or hv.get("ansible_ssh_port")
    return SshTarget(
        name,
        str(hv.get("ansible_host") or name),
        int(port) if port else None,
        hv.get("ansible_user") or hv.get("ansible_ssh_user"),
        hv.get("ansible_ssh_private_key_file"),
        args,
        str(hv.get("ansible_python_interpreter") or "python3"),
    )


def source_address(peer: str) -> str:
    """This host's address on its route to `peer` (what the client host reaches it at)."""
    try:
        ip = socket.gethostbyname(peer)
    except OSError as exc:
        raise VirtbenchError(f"client host address {peer!r} does not resolve: {exc}") from exc
    r = subprocess.run(["ip", "-o", "route", "get", ip], capture_output=True, text=True)
    m = re.search(r"\bsrc (\S+)", r.stdout)
    if r.returncode != 0 or not m:
        raise VirtbenchError(f"no route from this host to the client host {peer} ({ip})")
    return m.group(1)


class RemoteClient:
    """One client host for a run: its SSH channel, and the target's address it uses."""

    def __init__(self, target: SshTarget, target_address: str | None = None) -> None:
        self.ssh = target
        self.target_address = target_address or source_address(target.address)
        self._routes: dict[str, None] = {}

    def check(self) -> None:
        """Reachable, and the wrapper's Python is there (also opens the master)."""
        r = subprocess.run(
            self.ssh.argv(self.ssh.python, "-c", shlex.quote("import os; print(os.geteuid())")),
            capture_output=True,
            text=True,
            timeout=30,
        )
        said = " | ".join(
            ln
            for ln in (r.stderr or r.stdout).strip().splitlines()
            if "Permanently added" not in ln
        )[-400:]
        if r.returncode == SSH_FAILED:
            raise VirtbenchError(
                f"client host {self.ssh.name} ({self.ssh.address}) is unreachable over SSH: {said}"
            )
        if r.returncode != 0:
            raise VirtbenchError(
                f"client host {self.ssh.name}: {self.ssh.python} does not run there"
                f" (ansible_python_interpreter): {said}"
            )

    def close(self) -> None:
        """Stop the SSH master now (it would exit after 60 s idle anyway)."""
        subprocess.run([*self.ssh.argv()[:-1], "-O", "exit", self.ssh.address],
                       capture_output=True, timeout=30)  # fmt: skip

    # --- what a cell records ------------------------------------------------------------
    def clock(self) -> tuple[float, float]:
        """(offset, uncertainty) in seconds of the client's clock against ours: the
        exchange with the smallest round trip, offset = theirs - midpoint, +- RTT/2."""
        p = subprocess.Popen(
            self.ssh.argv(self.ssh.python, "-u", "-c", shlex.quote(CLOCK)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        best: tuple[float, float] | None = None
        try:
            assert p.stdin is not None and p.stdout is not None
            for _ in range(CLOCK_EXCHANGES):
                t0 = time.time()
                p.stdin.write("t\n")
                p.stdin.flush()
                line = p.stdout.readline()
                t1 = time.time()
                if not line:
                    break
                rtt = t1 - t0
                if best is None or rtt < best[1]:
                    best = (float(line) - (t0 + t1) / 2, rtt)
        finally:
            p.kill()
            p.wait()
        if best is None:
            raise WorkloadError(f"client host {self.ssh.name}: clock exchange got no answer")
        return best[0], best[1] / 2

    # --- addresses ----------------------------------------------------------------------
    def reach(self, host: str) -> str:
        """The address the client host uses for the endpoint `host` (as the target host
        sees it); a bridge or NAT gateway address must be routed by the target host."""
        if is_loopback(host):
            return self.target_address
        if host != self.target_address and host not in self._routes:
            r = subprocess.run(self.ssh.argv("ip", "-o", "route", "get", host),
                               capture_output=True, text=True, timeout=30)  # fmt: skip
            via = re.search(r"\bvia (\S+)", r.stdout)
            if r.returncode != 0 or (via and via.group(1) != self.target_address):
                net = ipaddress.ip_network(f"{host}/24", strict=False)
                raise WorkloadError(
                    f"client host {self.ssh.name} does not route {host} (an address of the"
                    f" target host's bridge) through the target {self.target_address}"
                    f" ({r.stdout.strip() or r.stderr.strip()}): add on {self.ssh.name}"
                    f" `ip route add {net} via {self.target_address}` and enable"
                    " net.ipv4.ip_forward on the target, or use the host network"
                )
            self._routes[host] = None
        return host

    # --- running a client -----------------------------------------------------------------
    def request(
        self,
        argv: list[str],
        cpus: list[int] | None,
        timeout: float | None,
        env: dict[str, str] | None,
    ) -> dict[str, Any]:
        """The wrapper's request: local temporary files named in argv travel with it."""
        files = {}
        roots = tuple(r + "/" for r in (tempfile.gettempdir(), str(safefs.PRIVATE_TMP)))
        for i, a in enumerate(argv):
            if i and a.startswith(roots) and os.path.isfile(a):  # e.g. wrk's Lua script
                data = base64.b64encode(Path(a).read_bytes()).decode()
                files[str(i)] = [f"{i}-{Path(a).name}", data]
        return {
            "argv": argv,
            "cpus": cpus,
            "timeout": timeout,
            "env": env or {},
            "files": files,
            "target": self.target_address,
            "rtt_port": RTT_PORT,
        }

    def run(
        self,
        argv: list[str],
        cpus: list[int] | None = None,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        req = self.request(argv, cpus, timeout, env)
        try:
            r = subprocess.run(
                self.ssh.argv(self.ssh.python, "-c", shlex.quote(WRAPPER)),
                input=json.dumps(req),
                capture_output=True,
                text=True,
                timeout=(timeout or 3600) + 60,
            )
        except subprocess.TimeoutExpired as exc:
            raise WorkloadError(
                f"client host {self.ssh.name}: {argv[0]} did not return within its time"
            ) from exc
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as exc:
            raise WorkloadError(
                f"client host {self.ssh.name}: {argv[0]} did not run there"
                f" (ssh exit {r.returncode}): {(r.stderr or r.stdout).strip()[-400:]}"
            ) from exc
        res = ExecResult(
            argv,
            int(out["rc"]),
            out["stdout"],
            out["stderr"],
            float(out["elapsed"]),
            bool(out["timed_out"]),
            float(out["user"]),
            float(out["sys"]),
        )
        return res, out


class CellClient:
    """The client host as one cell sees it: runs its clients, keeps what the cell records
    (`facts`, stored in the cell's labels as `client`)."""

    def __init__(self, client: RemoteClient) -> None:
        self.client = client
        self.facts: dict[str, Any] = {}
        self._lock = threading.Lock()
        # environments of the cell that run their clients here at the same time, this one
        # included (a co-location cell's busy environments): they share its SSH sessions
        # (serving/loadgen.process_limit)
        self.parties = 1

    def shared_by(self, parties: int) -> CellClient:
        """The same client host (the same facts, kept once for the cell) as one of `parties`
        environments that run their clients on it at once."""
        view = copy.copy(self)
        view.parties = parties
        return view

    def _note(self, out: dict[str, Any]) -> None:
        with self._lock:
            if not self.facts:  # filled in place: every shared_by() view holds this dict
                offset, err = self.client.clock()
                self.facts.update(
                    host=self.client.ssh.name,
                    address=self.client.ssh.address,
                    target_address=self.client.target_address,
                    clock_offset_ms=round(offset * 1000, 3),
                    clock_offset_err_ms=round(err * 1000, 3),
                )
            if out.get("rtt_s") is not None:
                rtt = round(out["rtt_s"] * 1000, 3)
                self.facts["rtt_ms"] = min(self.facts.get("rtt_ms", rtt), rtt)
            self.facts["cpus"] = out.get("cpus")

    def record(self, out: dict[str, Any]) -> None:
        """Note what a client run there reported (its CPUs, a round trip): the conference's
        stream agent (serving/remote_streams.py) reports its CPUs this way."""
        self._note(out)

    def reach(self, host: str) -> str:
        return self.client.reach(host)

    def run(
        self,
        argv: list[str],
        cpus: list[int] | None,
        timeout: float | None,
        env: dict[str, str] | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        res, out = self.client.run(argv, cpus, timeout, env)
        self._note(out)
        return res, out


def open_client(settings, campaign_file: str) -> RemoteClient | None:
    """The campaign's client host, resolved from its inventory and checked reachable; None
    when the campaign names none."""
    name = getattr(settings, "client_host", None)
    if not name:
        return None
    inv = settings.client_inventory or os.environ.get(INVENTORY_ENV)
    if not inv:
        raise VirtbenchError(
            f"{campaign_file}: campaign.client_host = {name!r} needs an inventory:"
            f" campaign.client_inventory, or {INVENTORY_ENV}"
        )
    path = Path(inv)
    if not path.is_absolute():
        path = Path(campaign_file).resolve().parent / path
    where = f"{campaign_file}: campaign.client_host"
    client = RemoteClient(resolve(path, name, where), settings.client_target_address)
    client.check()
    return client
