"""A server inside an environment: started through `Platform.spawn` on a free port (so it
works on every platform), ready before it is used, stopped on exit."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import ExecResult, Platform, Process, not_found
from ..ports import candidate_ports, ephemeral, is_loopback, port_free_on_host
from . import netpath, readiness
from .readiness import Probe, choose_probe

if TYPE_CHECKING:
    from ..workloads.base import RunContext

IN_USE_MARKERS = ("address already in use", "errno=98", "eaddrinuse")


@dataclass
class Served:
    proc: Process
    host: str
    port: int  # the port the client connects to (may differ from the one inside under NAT)
    inner_port: int  # the port the server listens on inside the environment
    ready_s: float = 0.0  # from spawn until the readiness probe succeeded
    ready_attempts: int = 0  # probes it took (> 1: refused or lost at first)
    path: str = ""  # the kind of path the client takes to it (netpath.kind: label net_path)
    command: str = ""  # argv[0] (named if it was not found inside the environment)


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
    ready_timeout: float | None = None,  # None: readiness.READY_TIMEOUT_S
    ready_key: str | None = None,  # the setting that gave ready_timeout, named when it expires
    settle_s: float = 0.3,
) -> Iterator[Served]:
    """Start a server inside `platform` on a free port, wait until it is ready, stop it on
    exit. A port in use is retried (auto) or reported naming `port_key`.

    Ready means: `probe` answers (e.g. a real HTTP request), else with `listen` ("tcp" or
    "udp") its socket shows up inside the environment (no connection that would disturb it),
    else a TCP connect succeeds (`tcp_probe`), else nothing is checked."""
    netpath.prepare(ctx)  # e.g. the bridge and the client netns, before a server binds there
    tried: list[int] = []
    fixed = None if requested_port else platform.server_ports()
    for port in fixed or candidate_ports(requested_port):
        tried.append(port)
        if not _endpoint_usable(platform, port, ctx, what, port_key, requested_port):
            continue
        check = choose_probe(platform, port, probe, listen, tcp_probe)
        served = _start(
            platform, make_argv(port), port, ctx, what, check, ready_timeout, settle_s, ready_key
        )
        if _lost_port(served, platform, what, port_key, requested_port):
            continue
        served.path = netpath.kind(served.host, ctx)
        if ctx.remote is not None:  # a client host: the address it reaches the server at
            try:
                served.host = ctx.remote.reach(served.host)
            except BaseException:
                served.proc.stop(timeout=3)
                raise
        try:
            yield served
        finally:
            served.proc.stop(timeout=3)
        return
    raise WorkloadError(f"{what}: no free port found inside '{platform.name}' (tried {tried})")


def _endpoint_usable(
    platform: Platform, port: int, ctx: RunContext, what: str, port_key: str, requested: int
) -> bool:
    """Whether a client can use the host side of `port`: False to try another (auto), an
    error naming `port_key` for the user's own port."""
    try:
        host, outer = platform.endpoint(port)
    except VirtbenchError:
        if requested:
            raise
        return False  # e.g. NAT: the published host port is taken; try another port
    if not requested and outer != port and ephemeral(outer):
        # a published port inside the client's source port range can clash with the
        # client's own connections and TIME_WAIT sockets: pick another server port
        ctx.log(f"{what}: published port {outer} is in the ephemeral range; trying another")
        return False
    if requested and is_loopback(host) and not port_free_on_host(outer):
        # a connect would reach the other program and hide the clash: refuse up front
        raise VirtbenchError(
            f"{port_key} = {port}: port already in use on this host ({host}:{outer});"
            " choose another port, or 0 to pick a free one"
        )
    return True


def _start(
    platform: Platform,
    argv: list[str],
    port: int,
    ctx: RunContext,
    what: str,
    probe: Probe | None,
    ready_timeout: float | None,
    settle_s: float,
    ready_key: str | None = None,
) -> Served:
    """Spawn the server and wait until `probe` answers (the server is stopped on failure,
    and what it printed is in the error)."""
    proc = platform.spawn(argv, cpus=ctx.cpus)
    t_spawn = time.monotonic()
    host, outer = platform.endpoint(port)
    attempts = 0
    try:
        # the address the cell's client uses (netpath: e.g. the host's bridge address for a
        # client on the bridge); the probe goes there too
        host = netpath.reach(platform, host, ctx)
        if probe is not None:
            limit = readiness.READY_TIMEOUT_S if ready_timeout is None else ready_timeout
            attempts = _wait_or_recover(platform, host, outer, proc, limit, what, probe, ctx)
        ready_s = time.monotonic() - t_spawn
        if attempts > 1:
            ctx.log(f"{what}: ready at {host}:{outer} after {attempts} probes, {ready_s:.2f}s")
        time.sleep(settle_s)  # a server that failed to bind exits within this
    except WorkloadError as exc:
        out = proc.stop(timeout=2)
        raise WorkloadError(not_ready(str(exc), ready_key, out)) from exc
    except BaseException:
        proc.stop(timeout=2)
        raise
    return Served(proc, host, outer, port, ready_s, attempts, command=argv[0])


def _wait_or_recover(
    platform: Platform,
    host: str,
    port: int,
    proc: Process,
    limit: float,
    what: str,
    probe: Probe,
    ctx: RunContext,
) -> int:
    """Wait for the server; if it is unreachable, ask the platform what it knows about its
    network (a VM guest's stalled NIC: vm/nicstall.py) and, after a reset, probe once more.
    The error names what the platform found either way."""
    try:
        return readiness.wait_ready(host, port, proc, limit, what, probe)
    except WorkloadError as exc:
        facts, reset = platform.recover_network()
        if not reset:
            raise WorkloadError(f"{exc}{'; platform: ' + facts if facts else ''}") from exc
        ctx.log(f"{what}: unreachable, then {facts}")
        try:
            return readiness.wait_ready(host, port, proc, limit, what, probe)
        except WorkloadError as again:
            raise WorkloadError(f"{again}; before this probe: {facts}") from again


def _lost_port(
    served: Served, platform: Platform, what: str, port_key: str, requested: int
) -> bool:
    """True if the server exited because its port was taken inside (auto: try another);
    an error for the user's own port or any other early exit; False if it runs."""
    if served.proc.poll() is None:
        return False
    out = served.proc.stop(timeout=2)
    text = (out.stderr + "\n" + out.stdout).strip()
    if any(m in text.lower() for m in IN_USE_MARKERS):
        if requested:
            raise VirtbenchError(
                f"{port_key} = {served.inner_port}: port already in use inside platform"
                f" '{platform.name}'; choose another port, or 0 to pick a free one"
            )
        return True
    tail = " | ".join(text.splitlines()[-4:])
    raise WorkloadError(
        f"{what}: server exited {out.returncode} at start: {tail}"
        + not_found(served.command, out.returncode, out.stderr)
    )


LOG_LINES = 8  # the server's last lines of output in a readiness error


def not_ready(error: str, ready_key: str | None, out: ExecResult) -> str:
    """A readiness error with the setting that bounds the wait and the server's last words
    (stopped: it was still starting, or hung): why it did not come up is usually there."""
    lines = [ln for ln in f"{out.stdout}\n{out.stderr}".splitlines() if ln.strip()]
    said = " | ".join(lines[-LOG_LINES:]) if lines else "nothing"
    key = f" ({ready_key} bounds the wait: raise it for a slow start)" if ready_key else ""
    return f"{error}{key}; the server printed: {said}"
