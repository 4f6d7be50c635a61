"""When a server is ready: probes (TCP connect, an HTTP 200, a listening socket seen from
inside) polled until they answer, and what the host's network says when none does."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from contextlib import suppress

from ..errors import WorkloadError
from ..platforms.base import Platform, Process
from ..ports import is_loopback

# How long a server may take to become reachable. Long on purpose: when a bridge address is
# handed to a new environment while the host still holds a REACHABLE neighbour entry with the
# previous owner's MAC, nothing gets through until that entry expires and is re-resolved
# (base_reachable_time 15-45 s, then 5 s DELAY and 3 probes: about a minute at worst;
# docs/code-measurements.md).
READY_TIMEOUT_S = 60.0


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


def _listening(table: str, port: int, states: tuple[str, ...]) -> bool:
    """True if a /proc/net/{tcp,udp}[6] dump has a socket bound to `port` in one of `states`."""
    want = f":{port:04X}"
    for line in table.splitlines()[1:]:
        f = line.split()
        if len(f) > 3 and f[1].endswith(want) and f[3] in states:
            return True
    return False


def listening_probe(platform: Platform, port: int, udp: bool = False) -> Probe:
    """A probe that looks for the server's socket INSIDE the environment instead of
    connecting: for servers that take any connection as a client (iperf3 starts a test and
    resets its listener when the prober hangs up, which can reset the real client) and for
    UDP servers. A first SYN lost on a fresh bridge is then the client's kernel's business
    (it retransmits after 1 s, before any measurement starts)."""
    proto = "udp" if udp else "tcp"
    # TCP LISTEN; UDP unconnected: Linux says 07 (TCP_CLOSE), gVisor's host network says 00
    states = ("07", "00") if udp else ("0A",)

    def probe(host: str, outer: int, timeout: float) -> None:
        r = platform.exec(["cat", f"/proc/net/{proto}", f"/proc/net/{proto}6"], timeout=10)
        if not _listening(r.stdout, port, states):  # tcp6 may be missing: stdout still counts
            raise NotReady(f"no {proto.upper()} socket on port {port} inside the environment yet")

    return probe


def choose_probe(
    platform: Platform, port: int, probe: Probe | None, listen: str | None, tcp_probe: bool
) -> Probe | None:
    """`probe` if given, else with `listen` ("tcp" or "udp") the server's socket seen from
    inside, else a TCP connect (`tcp_probe`), else None: nothing is checked."""
    if probe is None and listen:
        probe = listening_probe(platform, port, udp=listen == "udp")
    if probe is None and tcp_probe:
        probe = connect_probe
    return probe


def _net_facts(host: str) -> str:
    """What the host's neighbour table and routing say about `host` (for an unreachable
    server: FAILED/INCOMPLETE neighbour = ARP, no route = network mode)."""
    if is_loopback(host):
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
