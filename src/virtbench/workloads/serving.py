"""Servers inside an environment, clients on the host: ports, readiness, client CPU accounting.

Shared by the `network` and `web` suites. The server runs through `Platform.spawn` (so it works
on every platform); the client is a host process pinned to `ctx.client_cpus` whose CPU time is
read with wait4, so a saturated load generator can be told apart from a saturated server.
"""

from __future__ import annotations

import os
import random
import resource
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import ExecResult, Platform, Process
from ..platforms.procs import run_host
from .base import RunContext

# Preferred server ports: below the kernel's default ephemeral range (32768-60999), also after
# a NAT platform adds its publish offset (20000 by default), so a client's own source ports
# and TIME_WAIT sockets never collide with a server or published port. The host's real range
# is read at run time (ephemeral_range) and every port inside it is refused.
PORT_LOW, PORT_HIGH = 10000, 12500
EPHEMERAL_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
DEFAULT_EPHEMERAL = (32768, 60999)
IN_USE_MARKERS = ("address already in use", "errno=98", "eaddrinuse")
# How long a server may take to become reachable. Long on purpose: when a bridge address is
# handed to a new environment while the host still holds a REACHABLE neighbour entry with the
# previous owner's MAC, nothing gets through until that entry expires and is re-resolved
# (base_reachable_time 15-45 s, then 5 s DELAY and 3 probes: up to ~55 s, seen here).
READY_TIMEOUT_S = 60.0
# A load generator above this share of its usable CPUs is the bottleneck, not the server.
CLIENT_SATURATED = 0.90


def raise_nofile() -> int:
    """Raise our soft fd limit to the hard limit (children inherit it); return the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def port_free_on_host(port: int) -> bool:
    """True if nothing on the host holds `port` for TCP or UDP (a cheap first filter)."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                return False
    return True


def ephemeral_range(path: str = EPHEMERAL_FILE) -> tuple[int, int]:
    """The host's ephemeral (client source) port range, inclusive."""
    try:
        lo, hi = (int(x) for x in Path(path).read_text().split()[:2])
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return (lo, hi) if 0 < lo <= hi <= 65535 else DEFAULT_EPHEMERAL


def ephemeral(port: int, rng: tuple[int, int] | None = None) -> bool:
    lo, hi = rng or ephemeral_range()
    return lo <= port <= hi


def _pool(eph: tuple[int, int]) -> list[tuple[int, int]]:
    """Half-open port intervals to pick servers from: the preferred range minus the ephemeral
    one, else every unprivileged port outside it (a host may use a wider ephemeral range)."""

    def minus(lo: int, hi: int) -> list[tuple[int, int]]:
        parts = [(lo, min(hi, eph[0])), (max(lo, eph[1] + 1), hi)]
        return [(a, b) for a, b in parts if b - a >= 16]

    return minus(PORT_LOW, PORT_HIGH) or minus(1024, 65536)


def candidate_ports(requested: int, tries: int = 8) -> list[int]:
    """The user's port, or a few free-looking random ports outside the host's ephemeral range
    when `requested` is 0 (auto)."""
    if requested:
        return [requested]
    pool = _pool(ephemeral_range())
    if not pool:
        raise VirtbenchError(
            f"no server port outside the ephemeral range {ephemeral_range()} ({EPHEMERAL_FILE});"
            " set the suite's `port` explicitly"
        )
    rng = random.Random()
    ports: list[int] = []
    for _ in range(tries * 50):
        lo, hi = rng.choice(pool)
        p = rng.randrange(lo, hi)
        if p not in ports and port_free_on_host(p):
            ports.append(p)
            if len(ports) == tries:
                break
    return ports


class NotReady(Exception):
    """A readiness probe's 'not yet' (retry until the deadline)."""


# A readiness probe: (host, port, seconds) -> None when the server answered as expected;
# raises NotReady or OSError to retry, WorkloadError to give up at once.
Probe = Callable[[str, int, float], None]


def connect_probe(host: str, port: int, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


def http_probe(path: str) -> Probe:
    """A probe that GETs `path` and wants `HTTP/1.x 200` back: a listening socket alone can
    be a half-started server (or another program on a published port)."""

    def probe(host: str, port: int, timeout: float) -> None:
        name = f"[{host}]" if ":" in host else host
        req = f"GET {path} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n"
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(req.encode())
            head = b""
            while b"\r\n" not in head and len(head) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                head += chunk
        status = head.split(b"\r\n", 1)[0].decode(errors="replace")
        parts = status.split()
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise NotReady(f"no HTTP status line (got {status[:60]!r})")
        if parts[1] != "200":
            raise WorkloadError(f"GET {path} at {host}:{port} answered {status!r}, not 200")

    return probe


def _listening(table: str, port: int, state: str) -> bool:
    """True if a /proc/net/{tcp,udp}[6] dump has a socket bound to `port` in `state`."""
    want = f":{port:04X}"
    for line in table.splitlines()[1:]:
        f = line.split()
        if len(f) > 3 and f[1].endswith(want) and f[3] == state:
            return True
    return False


def listening_probe(platform: Platform, port: int, udp: bool = False) -> Probe:
    """A probe that looks for the server's socket INSIDE the environment instead of
    connecting: for servers that take any connection as a client (iperf3 starts a test and
    resets its listener when the prober hangs up, which can reset the real client) and for
    UDP servers. A first SYN lost on a fresh bridge is then the client's kernel's business
    (it retransmits after 1 s, before any measurement starts)."""
    proto = "udp" if udp else "tcp"
    state = "07" if udp else "0A"  # UDP 'unconnected', TCP LISTEN

    def probe(host: str, outer: int, timeout: float) -> None:
        r = platform.exec(["cat", f"/proc/net/{proto}", f"/proc/net/{proto}6"], timeout=10)
        if not _listening(r.stdout, port, state):  # tcp6 may be missing: stdout still counts
            raise NotReady(f"no {proto.upper()} socket on port {port} inside the environment yet")

    return probe


def _net_facts(host: str) -> str:
    """What the host's neighbour table and routing say about `host` (for an unreachable
    server: FAILED/INCOMPLETE neighbour = ARP, no route = network mode)."""
    if _is_loopback(host):
        return ""
    facts = []
    for argv in (["ip", "-br", "neigh", "show", "to", host], ["ip", "route", "get", host]):
        with suppress(OSError, subprocess.SubprocessError):
            r = subprocess.run(argv, capture_output=True, text=True, timeout=3)
            text = " ".join((r.stdout or r.stderr).split())
            facts.append(f"{argv[1] if argv[1] != '-br' else 'neigh'}: {text or 'none'}")
    return "; ".join(facts)


def wait_ready(
    host: str,
    port: int,
    proc: Process,
    timeout: float,
    what: str,
    probe: Probe = connect_probe,
    attempt_s: float = 1.0,
) -> int:
    """Poll `probe` until it succeeds; fail fast if the server process exits. Each attempt is
    bounded by `attempt_s` (a SYN lost while a new bridge or tap learns its neighbours costs
    one attempt, not the kernel's 1-3-7 s retransmit ladder). Returns the attempts made."""
    deadline = time.monotonic() + timeout
    last, attempts = "no attempt", 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return attempts  # the caller reads why from the process output
        attempts += 1
        try:
            probe(host, port, max(0.05, min(attempt_s, deadline - time.monotonic())))
            return attempts
        except (OSError, NotReady) as exc:
            last = str(exc) if isinstance(exc, NotReady) else (exc.strerror or str(exc))
        time.sleep(0.05)
    facts = _net_facts(host)
    raise WorkloadError(
        f"{what}: server unreachable at {host}:{port} after {timeout:.0f}s and {attempts}"
        f" attempts ({last}){'; ' + facts if facts else ''}; check the platform's network"
        " mode and firewall"
    )


def wait_reachable(host: str, port: int, proc: Process, timeout: float, what: str) -> None:
    """Poll a TCP connect until it succeeds; fail fast if the server process exits."""
    wait_ready(host, port, proc, timeout, what)


def _is_loopback(host: str) -> bool:
    return host.startswith("127.") or host in ("localhost", "::1")


@dataclass
class Served:
    proc: Process
    host: str
    port: int  # the port the client connects to (may differ from the one inside under NAT)
    inner_port: int  # the port the server listens on inside the environment
    ready_s: float = 0.0  # from spawn until the readiness probe succeeded
    ready_attempts: int = 0  # probes it took (> 1: refused or lost at first)


@contextmanager
def serve(
    platform: Platform,
    make_argv: Callable[[int], list[str]],
    ctx: RunContext,
    *,
    what: str,
    port_key: str,
    requested_port: int = 0,
    tcp_probe: bool = True,
    probe: Probe | None = None,
    listen: str | None = None,
    ready_timeout: float | None = None,  # None: READY_TIMEOUT_S
    settle_s: float = 0.3,
) -> Iterator[Served]:
    """Start a server inside `platform` on a free port, wait until it is ready, stop it on
    exit. A port in use is retried (auto) or reported naming `port_key`.

    Ready means: `probe` answers (e.g. a real HTTP request), else with `listen` ("tcp" or
    "udp") its socket shows up inside the environment (no connection that would disturb it),
    else a TCP connect succeeds (`tcp_probe`), else nothing is checked."""
    tried: list[int] = []
    for port in candidate_ports(requested_port):
        tried.append(port)
        try:
            host, outer = platform.endpoint(port)
        except VirtbenchError:
            if requested_port:
                raise
            continue  # e.g. NAT: the published host port is taken; try another port
        if not requested_port and outer != port and ephemeral(outer):
            # a published port inside the client's source port range can clash with the
            # client's own connections and TIME_WAIT sockets: pick another server port
            ctx.log(f"{what}: published port {outer} is in the ephemeral range; trying another")
            continue
        if requested_port and _is_loopback(host) and not port_free_on_host(outer):
            # a connect would reach the other program and hide the clash: refuse up front
            raise VirtbenchError(
                f"{port_key} = {port}: port already in use on this host ({host}:{outer});"
                " choose another port, or 0 to pick a free one"
            )
        proc = platform.spawn(make_argv(port), cpus=ctx.cpus)
        t_spawn = time.monotonic()
        host, outer = platform.endpoint(port)
        attempts = 0
        try:
            check = probe
            if check is None and listen:
                check = listening_probe(platform, port, udp=listen == "udp")
            if check is None and tcp_probe:
                check = connect_probe
            if check is not None:
                limit = READY_TIMEOUT_S if ready_timeout is None else ready_timeout
                attempts = wait_ready(host, outer, proc, limit, what, check)
            ready_s = time.monotonic() - t_spawn
            if attempts > 1:
                ctx.log(f"{what}: ready at {host}:{outer} after {attempts} probes, {ready_s:.2f}s")
            time.sleep(settle_s)  # a server that failed to bind exits within this
        except BaseException:
            proc.stop(timeout=2)
            raise
        if proc.poll() is not None:
            out = proc.stop(timeout=2)
            text = (out.stderr + "\n" + out.stdout).strip()
            if any(m in text.lower() for m in IN_USE_MARKERS):
                if requested_port:
                    raise VirtbenchError(
                        f"{port_key} = {port}: port already in use inside platform"
                        f" '{platform.name}'; choose another port, or 0 to pick a free one"
                    )
                continue
            tail = " | ".join(text.splitlines()[-4:])
            raise WorkloadError(f"{what}: server exited {out.returncode} at start: {tail}")
        try:
            yield Served(proc, host, outer, port, ready_s, attempts)
        finally:
            proc.stop(timeout=3)
        return
    raise WorkloadError(f"{what}: no free port found inside '{platform.name}' (tried {tried})")


@dataclass
class ClientRun:
    result: ExecResult
    cpu_util: float  # share of the CPUs the client could use, 0..1 (per-thread tools: of N)

    @property
    def saturated(self) -> bool:
        return self.cpu_util > CLIENT_SATURATED


def usable_cpus(ctx: RunContext, threads: int) -> int:
    """CPUs a client with `threads` threads can keep busy under its pinning."""
    cpus = len(ctx.client_cpus) if ctx.client_cpus else len(os.sched_getaffinity(0))
    return max(1, min(cpus, threads))


def _busy(res: ExecResult) -> float:
    return (res.cpu_user_s or 0.0) + (res.cpu_sys_s or 0.0)


def run_client(
    argv: list[str],
    ctx: RunContext,
    *,
    threads: int = 1,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> ClientRun:
    """Run a load generator on the host pinned to the client CPUs; measure its CPU use."""
    res = run_host(argv, cpus=ctx.client_cpus, timeout=timeout, env=env)
    util = _busy(res) / max(res.elapsed_s, 1e-6) / usable_cpus(ctx, threads)
    return ClientRun(res, util)


def client_slots(ctx: RunContext, processes: int) -> list[list[int] | None]:
    """The CPU each of `processes` single-threaded clients is pinned to: one per client CPU
    (round robin when there are more processes than CPUs); None = unpinned (no client CPUs
    configured). `processes` 0 means one per client CPU (1 when unpinned)."""
    cpus = ctx.client_cpus
    k = processes or (len(cpus) if cpus else 1)
    if not cpus:
        return [None] * k
    return [[cpus[i % len(cpus)]] for i in range(k)]


def cpu_times(cpus: set[int]) -> dict[int, tuple[int, int]]:
    """cpu -> (busy, total) jiffies from /proc/stat (busy counts every task and irq work)."""
    out: dict[int, tuple[int, int]] = {}
    with suppress(OSError, ValueError):
        for line in Path("/proc/stat").read_text().splitlines():
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                continue
            v = [int(x) for x in fields[:8]]
            idle = v[3] + v[4]  # idle + iowait
            out[int(name[3:])] = (sum(v) - idle, sum(v))
    return out


def busiest_share(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> float:
    """The highest busy share among the CPUs over the interval (0..1)."""
    shares = [
        (after[c][0] - before[c][0]) / (after[c][1] - before[c][1])
        for c in before
        if c in after and after[c][1] > before[c][1]
    ]
    return max(shares, default=0.0)


@dataclass
class ParallelRun:
    runs: list[ClientRun]  # per process; cpu_util = load of the CPU(s) it shared
    cpu_util: float  # the busiest client CPU's share, 0..1 (what decides saturation)
    # how busy the client CPUs were with ANYTHING (other tasks, softirq work ksoftirqd took
    # over): context for a noisy step, not a verdict (the send-rate check catches a client
    # that got too little CPU)
    cpu_busy: float = 0.0

    @property
    def saturated(self) -> bool:
        return self.cpu_util > CLIENT_SATURATED


def cpu_loads(results: list[ExecResult], slots: list[list[int] | None]) -> list[float]:
    """Per process: the share of its CPU that ALL client processes pinned there used (so two
    processes sharing one CPU at 50 % each both read 100 %). Unpinned processes are judged
    together against the CPUs they could use."""
    load: dict[int, float] = {}
    free_busy, free_n = 0.0, 0
    for res, slot in zip(results, slots, strict=True):
        rate = _busy(res) / max(res.elapsed_s, 1e-6)
        if slot:
            for cpu in slot:
                load[cpu] = load.get(cpu, 0.0) + rate / len(slot)
        else:
            free_busy, free_n = free_busy + rate, free_n + 1
    free = free_busy / max(1, min(free_n, len(os.sched_getaffinity(0)))) if free_n else 0.0
    return [max(load[c] for c in slot) if slot else free for slot in slots]


def run_clients(
    argvs: list[list[str]],
    slots: list[list[int] | None],
    *,
    timeout: float | None = None,
    stagger_s: float = 0.0,
) -> ParallelRun:
    """Run several load generator processes side by side (process i pinned to slots[i],
    started i * stagger_s after the first, so equal open-loop schedules interleave)."""
    results: list[ExecResult | None] = [None] * len(argvs)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            time.sleep(i * stagger_s)
            results[i] = run_host(argvs[i], cpus=slots[i], timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(argvs))]
    watched = {c for slot in slots for c in (slot or os.sched_getaffinity(0))}
    before = cpu_times(watched)
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    busy = busiest_share(before, cpu_times(watched))
    if errors:
        raise errors[0]
    done = [r for r in results if r is not None]
    loads = cpu_loads(done, slots)
    runs = [ClientRun(r, u) for r, u in zip(done, loads, strict=True)]
    return ParallelRun(runs, max(loads, default=0.0), busy)
