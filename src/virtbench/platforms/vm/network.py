"""Guest networking: a tap on virtbench's bridge (private addresses, optional NAT publishing)
through the shared hostnet helpers, or QEMU user-mode networking with host port forwards.

`auto` tries the bridge and falls back to user mode when a tap cannot be made (no root, no
tun device); the mode really used is recorded with every result.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field

from ... import hostnet
from ...errors import PlatformError
from .qmp import Qmp

MODES = ("auto", "bridge", "nat", "user")
USER_GUEST_IP = "10.0.2.15"


@dataclass
class GuestNet:
    owner: str
    mode: str  # bridge | nat | user (resolved)
    tap: str | None = None
    guest_ip: str | None = None  # without prefix
    prefixlen: int = 24
    gateway: str | None = None
    fallback_reason: str | None = None
    _forwards: dict[int, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def setup(cls, owner: str, requested: str) -> GuestNet:
        if requested == "user":
            return cls(owner, "user", guest_ip=USER_GUEST_IP, gateway="10.0.2.2")
        try:
            tap, ip = hostnet.add_tap(owner)
        except PlatformError as exc:
            if requested != "auto":
                raise PlatformError(
                    f'network = "{requested}": cannot attach a tap to {hostnet.BRIDGE}: {exc}; '
                    'use network = "user" (QEMU user-mode networking) instead'
                ) from exc
            net = cls(owner, "user", guest_ip=USER_GUEST_IP, gateway="10.0.2.2")
            net.fallback_reason = str(exc)
            return net
        mode = "nat" if requested == "nat" else "bridge"
        return cls(
            owner,
            mode,
            tap=tap,
            guest_ip=ip,
            prefixlen=hostnet.SUBNET.prefixlen,
            gateway=hostnet.GATEWAY,
        )

    @property
    def cidr(self) -> str:
        return f"{self.guest_ip}/{self.prefixlen}"

    def endpoint(self, port: int, qmp: Qmp | None) -> tuple[str, int]:
        """Host-side address for guest `port`: the guest itself on the bridge, a DNAT on the
        bridge gateway for nat, a QEMU host forward on loopback for user mode."""
        if port in self._forwards:
            return self._forwards[port]
        if self.mode == "bridge":
            addr = (str(self.guest_ip), port)
        elif self.mode == "nat":
            addr = hostnet.publish(self.owner, free_port(), str(self.guest_ip), port)
        else:
            if qmp is None:
                raise PlatformError("user-mode networking needs QMP to add a port forward")
            host_port = free_port()
            out = qmp.hmp(f"hostfwd_add net0 tcp:127.0.0.1:{host_port}-:{port}")
            if out.strip():
                raise PlatformError(f"QEMU could not forward port {port}: {out.strip()}")
            addr = ("127.0.0.1", host_port)
        self._forwards[port] = addr
        return addr

    def teardown(self) -> None:
        """Remove NAT rules, the tap and the address lease (idempotent)."""
        if self.mode in ("bridge", "nat"):
            with contextlib.suppress(PlatformError):
                hostnet.unpublish(self.owner)
            hostnet.detach(self.owner)
        self._forwards.clear()


def free_port() -> int:
    """An unused TCP port on the host, chosen by the kernel."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
