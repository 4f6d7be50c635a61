"""The path a load generator takes to its server: the network and web suites' `client_path`.

A ratio between two platforms measures the platforms only if both were reached over the same
kind of path. With the client on the host, native and host-network containers are reached
over loopback, bridge and NAT containers and VMs through virtbench's bridge: loopback carries
tens of Gbit/s, a veth and a bridge a fraction of it, so the ratio measures the path.

client_path (suite option)
  host      the client in the host's own network namespace (the default; what it was before):
            each target at its endpoint, loopback for native and host networking, the host's
            side of the bridge for the others. Each sample records which.
  loopback  the same client, and a target not reached over loopback fails its cell (a
            comparison that must stay on loopback: native against host-network containers).
  bridge    the client in a network namespace of its own, plugged into virtbench's bridge by a
            veth like a bridge container, reaching every target over the bridge: native and
            host-network containers at the host's address on the bridge (their server binds
            only that address), bridge containers and VMs at their bridge address, NAT
            containers at the published port on the host's bridge address (routed by the host
            back into the bridge: `hostnet.enable_hairpin`).

Every sample carries the path really taken as label `net_path` (results.NET_PATH_LABEL):
`loopback`, `host-bridge` (from the host's own stack into a bridge), `bridge` (a client
netns on virtbench's bridge) or `remote` (a client host, serving/remote.py). Analysis gives
no ratio across different paths and says why (analysis/normalize.py, analysis/compare.py).

The client namespace is made once per process on first use (about 30 ms), kept for the run
(targets come and go; the client's address and MAC stay, so no neighbour entry goes stale),
and removed by `close()` (the runner's end, Ctrl-C included), at exit, and by
`virtbench cleanup` (hostnet's cleaner: its name is an owner claimed by this process).
Its client runs under `nsenter --net`, which execs the tool in place: the runner still
reaps the tool itself (wait4), so the client's CPU time and the client-saturation rule are
unchanged, whatever the cgroup version.
"""

from __future__ import annotations

import atexit
import ipaddress
import secrets
import threading
from dataclasses import dataclass
from typing import Any

from .. import cleanup, hostnet, tools
from ..errors import WorkloadError
from ..naming import NAME_PREFIX
from ..ports import is_loopback
from ..results import NET_PATH_LABEL

PARAM = "client_path"
HOST, LOOPBACK, BRIDGE = "host", "loopback", "bridge"
CLIENT_PATHS = (HOST, LOOPBACK, BRIDGE)
# the kinds a sample records (label net_path)
HOST_BRIDGE, REMOTE = "host-bridge", "remote"
KINDS = (LOOPBACK, HOST_BRIDGE, BRIDGE, REMOTE)

HELP = (
    "where the load generator runs: host (the host's network: loopback or the host's side of"
    " the bridge, per platform), loopback (the same, only loopback targets), bridge (its own"
    " netns on virtbench's bridge: one path kind for every platform); see docs/network.md"
)

__all__ = ["NET_PATH_LABEL"]


def requested(ctx: Any) -> str:
    return str((getattr(ctx, "params", None) or {}).get(PARAM, HOST))


def on_bridge(ctx: Any) -> bool:
    return requested(ctx) == BRIDGE and getattr(ctx, "remote", None) is None


# --- the client's network namespace ---------------------------------------------------------
@dataclass
class ClientNetns:
    """A netns on virtbench's bridge for load generators (named like an instance: `vb-xxxxxx`,
    its veth `vb-xxxxxx-h`), claimed by this process so `virtbench cleanup` spares it."""

    name: str
    address: str
    hairpin: bool = False  # this namespace holds a hairpin table (hostnet.enable_hairpin)

    @classmethod
    def create(cls) -> ClientNetns:
        tools.require(["ip", "nsenter"], needed_by="client_path = bridge")
        name = NAME_PREFIX + secrets.token_hex(3)
        cleanup.claim(name)
        try:
            hostnet.create_netns(name)
            att = hostnet.attach_netns(name, name)
            ns = cls(name, att.address)
            ns.hairpin = hostnet.enable_hairpin(name)
        except BaseException:
            _remove(name, True)
            raise
        return ns

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run inside the namespace: nsenter execs it in place (same PID, so wait4 on it
        gives the tool's own CPU time)."""
        return ["nsenter", f"--net={hostnet.NETNS_DIR / self.name}", "--", *argv]

    def close(self) -> None:
        _remove(self.name, self.hairpin)


def _remove(name: str, hairpin: bool) -> None:
    if hairpin:
        hostnet.disable_hairpin(name)
    hostnet.detach(name)
    hostnet.delete_netns(name)
    cleanup.release(name)


_shared: ClientNetns | None = None
_lock = threading.Lock()


def client_netns() -> ClientNetns:
    """This process's client namespace, made on first use."""
    global _shared
    with _lock:
        if _shared is None or not hostnet.netns_exists(_shared.name):
            _shared = ClientNetns.create()
        return _shared


def prepare(ctx: Any) -> None:
    """Make what the cell's client path needs before its server starts: with `bridge`, the
    client netns (and so the bridge, whose host address a native server binds)."""
    if on_bridge(ctx):
        client_netns()


def close() -> None:
    """Remove the client namespace, if one was made (idempotent)."""
    global _shared
    with _lock:
        ns, _shared = _shared, None
    if ns is not None:
        ns.close()


atexit.register(close)


# --- addresses --------------------------------------------------------------------------------
def listen_address(platform: Any, ctx: Any) -> str | None:
    """The address a server inside `platform` binds to: the one its client uses. The
    platform's own (`Platform.listen_address`), except for a server on the host's loopback:
    with a client on the bridge it binds the host's bridge address instead, with a client
    host every address (it reaches the target's address; the readiness probe still uses
    loopback)."""
    inner = platform.listen_address()
    if inner is None or not is_loopback(inner):
        return inner
    if getattr(ctx, "remote", None) is not None:
        return None
    if on_bridge(ctx):
        return hostnet.GATEWAY
    return inner


def reach(platform: Any, host: str, ctx: Any) -> str:
    """The address the client uses for the endpoint `host` (`Platform.endpoint`'s, as the
    host sees it), for this cell's client path; a WorkloadError when that path cannot reach
    it (the reason names the platform and what to change)."""
    mode = requested(ctx)
    if getattr(ctx, "remote", None) is not None:
        return host  # the client host maps it (serving/remote.py)
    if mode == LOOPBACK and not is_loopback(host):
        raise WorkloadError(
            f"client_path = \"loopback\": platform '{platform.name}' is reached at {host}, not"
            ' over loopback; use client_path = "bridge" to put every platform on one path'
        )
    if mode != BRIDGE:
        return host
    if is_loopback(host):
        inner = platform.listen_address()
        if inner is not None and is_loopback(inner):
            return hostnet.GATEWAY  # the server is in the host's network, bound there
        raise WorkloadError(
            f"client_path = \"bridge\": platform '{platform.name}' is reached only through a"
            f" forwarder on the host's loopback ({host}: QEMU user-mode networking, Docker's"
            " nat), which a client on the bridge cannot use; use a bridge or nat network of"
            ' virtbench, or client_path = "host"'
        )
    if not _on_subnet(host):
        raise WorkloadError(
            f"client_path = \"bridge\": platform '{platform.name}' is reached at {host}, which"
            f" is not on virtbench's bridge {hostnet.BRIDGE} ({hostnet.SUBNET}; e.g. Docker's"
            ' own network); use client_path = "host"'
        )
    return host


def _on_subnet(host: str) -> bool:
    try:
        return ipaddress.ip_address(host) in hostnet.SUBNET
    except ValueError:
        return False


def kind(host: str, ctx: Any) -> str:
    """What the sample records as net_path for a client that reached `host`."""
    if getattr(ctx, "remote", None) is not None:
        return REMOTE
    if on_bridge(ctx):
        return BRIDGE
    return LOOPBACK if is_loopback(host) else HOST_BRIDGE


def wrap(argv: list[str], ctx: Any) -> list[str]:
    """argv as this cell's client runs it (inside the client namespace for `bridge`)."""
    return client_netns().wrap(argv) if on_bridge(ctx) else argv
