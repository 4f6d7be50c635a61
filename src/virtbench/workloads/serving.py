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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import ExecResult, Platform, Process
from ..platforms.procs import run_host
from .base import RunContext

# Well below the kernel's ephemeral range (32768+), also after a NAT platform adds its publish
# offset (20000 by default): a client's own source ports and TIME_WAIT sockets never collide.
PORT_LOW, PORT_HIGH = 10000, 12500
IN_USE_MARKERS = ("address already in use", "errno=98", "eaddrinuse")
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


def candidate_ports(requested: int, tries: int = 8) -> list[int]:
    """The user's port, or a few free-looking random ports when `requested` is 0 (auto)."""
    if requested:
        return [requested]
    rng = random.Random()
    ports: list[int] = []
    while len(ports) < tries:
        p = rng.randrange(PORT_LOW, PORT_HIGH)
        if p not in ports and port_free_on_host(p):
            ports.append(p)
    return ports


def wait_reachable(host: str, port: int, proc: Process, timeout: float, what: str) -> None:
    """Poll a TCP connect until it succeeds; fail fast if the server process exits."""
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return  # the caller reads why from the process output
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as exc:
            last = exc.strerror or str(exc)
        time.sleep(0.05)
    raise WorkloadError(
        f"{what}: server unreachable at {host}:{port} after {timeout:.0f}s ({last});"
        " check the platform's network mode and firewall"
    )


def _is_loopback(host: str) -> bool:
    return host.startswith("127.") or host in ("localhost", "::1")


@dataclass
class Served:
    proc: Process
    host: str
    port: int  # the port the client connects to (may differ from the one inside under NAT)
    inner_port: int  # the port the server listens on inside the environment


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
    ready_timeout: float = 15.0,
    settle_s: float = 0.3,
) -> Iterator[Served]:
    """Start a server inside `platform` on a free port, wait until the client can reach it,
    stop it on exit. A port in use is retried (auto) or reported naming `port_key`."""
    tried: list[int] = []
    for port in candidate_ports(requested_port):
        tried.append(port)
        try:
            host, outer = platform.endpoint(port)
        except VirtbenchError:
            if requested_port:
                raise
            continue  # e.g. NAT: the published host port is taken; try another port
        if requested_port and _is_loopback(host) and not port_free_on_host(outer):
            # a connect would reach the other program and hide the clash: refuse up front
            raise VirtbenchError(
                f"{port_key} = {port}: port already in use on this host ({host}:{outer});"
                " choose another port, or 0 to pick a free one"
            )
        proc = platform.spawn(make_argv(port), cpus=ctx.cpus)
        host, outer = platform.endpoint(port)
        try:
            if tcp_probe:
                wait_reachable(host, outer, proc, ready_timeout, what)
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
            yield Served(proc, host, outer, port)
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
    busy = (res.cpu_user_s or 0.0) + (res.cpu_sys_s or 0.0)
    util = busy / max(res.elapsed_s, 1e-6) / usable_cpus(ctx, threads)
    return ClientRun(res, util)
