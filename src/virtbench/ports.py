"""Server ports: free on the host and clear of the host's ephemeral (client source) range."""

from __future__ import annotations

import ipaddress
import random
import socket
from pathlib import Path

from .errors import VirtbenchError

# Preferred server ports: below the kernel's default ephemeral range (32768-60999), also after
# a NAT platform adds its publish offset (20000 by default), so a client's own source ports
# and TIME_WAIT sockets never collide with a server or published port. The host's real range
# is read at run time (ephemeral_range) and every port inside it is refused.
PORT_LOW, PORT_HIGH = 10000, 12500
EPHEMERAL_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
DEFAULT_EPHEMERAL = (32768, 60999)


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


def is_loopback(host: str) -> bool:
    """True for a loopback address (127.0.0.0/8, ::1) or `localhost`."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
