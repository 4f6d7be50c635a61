"""Host networking virtbench creates and removes: a private Linux bridge (like docker0),
network namespaces, veth pairs, addresses from a small file-based IPAM, and published ports
through nftables DNAT (like `docker run -p` without the userland proxy).

Shared by the container platform (veth into a netns) and the VM platform (tap on the bridge).
Everything is named with NAME_PREFIX; `clean()` removes leftovers of dead runs. All changes
to shared objects (bridge, IPAM) happen under one file lock, since several virtbench
processes may run side by side.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import cleanup, safefs, tools
from .errors import PlatformError
from .filelock import file_lock
from .naming import NAME_PREFIX

BRIDGE = NAME_PREFIX + "br0"
SUBNET = ipaddress.ip_network("10.213.0.0/24")  # private; checked against host routes
GATEWAY = str(SUBNET.network_address + 1)
# The bridge's own MAC, fixed (locally administered: 02, then "vb"). A Linux bridge whose
# address was never set takes the lowest MAC among its ports and changes it as ports come and
# go; a load generator's netns (serving/netpath.py) and guests keep the gateway's old MAC
# REACHABLE for 15-45 s, and their packets to 10.213.0.1 are dropped by the bridge: a native
# or host-network server on the bridge path timed out after a bridge/nat container's veth
# (the lowest MAC while it lived) left. A set address stays whatever ports do.
BRIDGE_MAC = "02:76:62:00:00:01"
STATE = Path("/run/virtbench/net")
IPAM = STATE / "ipam"
NETNS_DIR = Path("/run/netns")
PROTOCOLS = ("tcp", "udp")


def _ip(*args: str, check: bool = True, netns: str | None = None) -> subprocess.CompletedProcess:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise PlatformError(f"{' '.join(argv)} failed: {r.stderr.strip()}")
    return r


def _ip_batch(lines: list[str], netns: str | None = None) -> None:
    """Several `ip` commands in one process (`ip -batch -`): each `ip` start costs a few
    ms, and a container start used to pay for about ten. Stops at the first failing line."""
    argv = ["ip", *(["-n", netns] if netns else []), "-batch", "-"]
    r = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise PlatformError(
            f"{' '.join(argv)} failed: {r.stderr.strip()}\ncommands:\n  " + "\n  ".join(lines)
        )


def _nft(script: str) -> None:
    r = subprocess.run(["nft", "-f", "-"], input=script, capture_output=True, text=True)
    if r.returncode != 0:
        raise PlatformError(f"nft failed: {r.stderr.strip()}\nrules:\n{script}")


def _locked() -> contextlib.AbstractContextManager[None]:
    return file_lock(STATE / ".lock")


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def _check_subnet_free() -> None:
    """Refuse if the host already routes our subnet through something that is not ours."""
    r = _ip("-j", "route", "show", "to", "match", str(SUBNET.network_address + 1), check=False)
    with contextlib.suppress(ValueError):
        for route in json.loads(r.stdout or "[]"):
            if route.get("dst") != "default" and route.get("dev") != BRIDGE:
                raise PlatformError(
                    f"subnet {SUBNET} is already routed via {route.get('dev')} on this host; "
                    f"virtbench needs it free for its bridge {BRIDGE}"
                )


def _ensure_bridge_locked() -> None:
    if link_exists(BRIDGE):
        _pin_address_locked()
        return
    tools.require(["ip"], needed_by="bridge networking")
    _check_subnet_free()
    try:
        _ip_batch(bridge_commands())
    except PlatformError:
        delete_link(BRIDGE)  # never leave a half-configured bridge behind
        raise


ADDR_SET = "3"  # /sys/class/net/*/addr_assign_type: NET_ADDR_SET, the kernel keeps it


def _pin_address_locked() -> None:
    """A bridge made before BRIDGE_MAC (or by hand) follows its ports' MACs: set it to the
    MAC it has now, so no neighbour that learned it goes stale, and it stays."""
    try:
        kind = Path("/sys/class/net", BRIDGE, "addr_assign_type").read_text().strip()
        mac = Path("/sys/class/net", BRIDGE, "address").read_text().strip()
    except OSError:
        return
    if kind != ADDR_SET:
        _ip("link", "set", BRIDGE, "address", mac, check=False)


def bridge_commands(
    bridge: str = BRIDGE,
    gateway: str = GATEWAY,
    prefixlen: int = SUBNET.prefixlen,
    mac: str | None = BRIDGE_MAC,
) -> list[str]:
    """`ip -batch` lines for the bridge; the parameters serve bridges made elsewhere (e.g.
    inside a VM guest for container@vm), the defaults are the host's own. `mac`: the
    bridge's fixed address (None: the kernel's, which follows the ports)."""
    return [
        f"link add {bridge}{f' address {mac}' if mac else ''} type bridge",
        f"addr add {gateway}/{prefixlen} dev {bridge}",
        f"link set {bridge} up",
    ]


def ensure_bridge() -> str:
    """Create the shared bridge (idempotent); return its name. Gateway address: GATEWAY."""
    with _locked():
        _ensure_bridge_locked()
    return BRIDGE


def _bridge_ports() -> list[str]:
    brif = Path("/sys/class/net", BRIDGE, "brif")
    return sorted(p.name for p in brif.iterdir()) if brif.is_dir() else []


def _release_bridge_locked() -> None:
    """Delete the bridge once nothing is attached and no address is handed out."""
    if link_exists(BRIDGE) and not _bridge_ports() and not _leases():
        _ip("link", "del", BRIDGE, check=False)


def release_bridge() -> None:
    with _locked():
        _release_bridge_locked()


# --- addresses -----------------------------------------------------------------------------
def _leases() -> dict[str, str]:
    """ip -> owner name."""
    if not IPAM.is_dir():
        return {}
    leases = {f.name: safefs.read_state(f) for f in IPAM.iterdir()}
    return {ip: who.strip() for ip, who in leases.items() if who is not None}  # trusted only


def _allocate_locked(owner: str) -> str:
    safefs.state_dir(IPAM)
    taken = set(_leases()) | {GATEWAY}
    for host in SUBNET.hosts():
        ip = str(host)
        if ip not in taken:
            safefs.write_state(IPAM / ip, owner + "\n")
            return ip
    raise PlatformError(f"no free address left in {SUBNET} (run: virtbench cleanup)")


def allocate_ip(owner: str) -> str:
    with _locked():
        return _allocate_locked(owner)


def _release_ips_locked(owner: str) -> None:
    for ip, who in _leases().items():
        if who == owner:
            # forget the old owner's MAC: the next owner of this address has another one, and
            # a stale REACHABLE neighbour entry blackholes its traffic for tens of seconds
            # (docs/code-measurements.md); the same
            # holds inside our namespaces on the bridge (a client netns outlives targets)
            _ip("neigh", "flush", "to", ip, check=False)
            for ns in _own_netns():
                if ns != owner:
                    _ip("neigh", "flush", "to", ip, check=False, netns=ns)
            (IPAM / ip).unlink(missing_ok=True)


def _own_netns() -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(NAME_PREFIX))


# --- namespaces and links ------------------------------------------------------------------
def netns_exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def create_netns(name: str) -> str:
    """A named netns (`ip netns add`), loopback up; returns its path for OCI specs."""
    if not netns_exists(name):
        _ip("netns", "add", name)
    _ip("link", "set", "lo", "up", netns=name)
    return str(NETNS_DIR / name)


def delete_netns(name: str) -> None:
    if netns_exists(name):
        _ip("netns", "del", name, check=False)


def delete_link(name: str) -> None:
    if link_exists(name):
        _ip("link", "del", name, check=False)


@dataclass
class Attachment:
    """A netns plugged into the bridge: host-side veth, address, owner."""

    owner: str
    netns: str
    host_if: str
    address: str
    gateway: str = GATEWAY
    prefixlen: int = SUBNET.prefixlen


def veth_names(owner: str) -> tuple[str, str]:
    """Host and peer interface names (<= 15 chars, the kernel's IFNAMSIZ limit)."""
    host, peer = f"{owner}-h", f"{owner}-c"
    if len(host) > 15:
        raise PlatformError(f"interface name {host!r} longer than 15 characters")
    return host, peer


def attach_commands(
    host_if: str,
    netns: str,
    ifname: str,
    ip: str,
    bridge: str = BRIDGE,
    gateway: str = GATEWAY,
    prefixlen: int = SUBNET.prefixlen,
) -> tuple[list[str], list[str]]:
    """(host-side, inside-netns) `ip -batch` lines that plug `netns` into the bridge. The
    peer is created inside the namespace under its final name: moving a device between
    namespaces waits for an RCU grace period (docs/code-measurements.md), creating it there
    does not."""
    host = [
        f"link add {host_if} type veth peer name {ifname} netns {netns}",
        f"link set {host_if} master {bridge}",
        f"link set {host_if} up",
    ]
    inside = [
        f"addr add {ip}/{prefixlen} dev {ifname}",
        f"link set {ifname} up",
        f"route add default via {gateway}",
    ]
    return host, inside


def attach_netns(owner: str, netns: str, ifname: str = "eth0") -> Attachment:
    """veth pair: host end on the bridge, peer in `netns` as `ifname` with an address and a
    default route via the bridge."""
    host_if, _peer = veth_names(owner)
    with _locked():
        _ensure_bridge_locked()
        ip = _allocate_locked(owner)
        try:
            host, inside = attach_commands(host_if, netns, ifname, ip)
            _ip_batch(host)
            _ip_batch(inside, netns=netns)
        except PlatformError:
            delete_link(host_if)
            _release_ips_locked(owner)
            raise
    return Attachment(owner, netns, host_if, ip)


def add_tap(owner: str, suffix: str = "t") -> tuple[str, str]:
    """A tap device on the bridge for a VM, plus an address for the guest: (tap, ip)."""
    tap = f"{owner}-{suffix}"
    with _locked():
        _ensure_bridge_locked()
        ip = _allocate_locked(owner)
        try:
            _ip_batch(
                [
                    f"tuntap add dev {tap} mode tap",
                    f"link set {tap} master {BRIDGE}",
                    f"link set {tap} up",
                ]
            )
        except PlatformError:
            delete_link(tap)
            _release_ips_locked(owner)
            raise
    return tap, ip


def detach(owner: str) -> None:
    """Remove the owner's links and addresses; drop the bridge if it is now unused."""
    with _locked():
        for name in _owned_links(owner):
            delete_link(name)
        _release_ips_locked(owner)
        _release_bridge_locked()


def _owned_links(owner: str) -> list[str]:
    return sorted(
        p.name for p in Path("/sys/class/net").iterdir() if p.name.startswith(owner + "-")
    )


# --- routing between bridge ports through the host ----------------------------------------
FORWARDING = "/proc/sys/net/ipv4/conf/{}/forwarding"


def bridge_forwarding(bridge: str = BRIDGE) -> bool:
    try:
        return Path(FORWARDING.format(bridge)).read_text().strip() == "1"
    except OSError:
        return False


def hairpin_rules(table: str, bridge: str = BRIDGE) -> str:
    """An nft script that lets the host route only from `bridge` back into `bridge` (a
    published port reached from a bridge port) and nothing else in from it."""
    return (
        f"table ip {table} {{\n  chain forward {{\n"
        "    type filter hook forward priority 0; policy accept;\n"
        f'    iifname "{bridge}" oifname != "{bridge}" drop\n  }}\n}}\n'
    )


HAIRPIN_SUFFIX = "-fwd"


def enable_hairpin(owner: str) -> bool:
    """Let packets that come in on the bridge be routed back out of it (IPv4 forwarding of
    the bridge device only, the rest of the host untouched), so a bridge port reaches a port
    published on the gateway. Turned on together with a filter that drops anything routed
    from the bridge elsewhere, in an nft table `<owner>-fwd`; each user has its own table and
    the last one gone turns forwarding off again (`disable_hairpin`, cleanup). Forwarding the
    host's administrator turned on is left alone. Returns True if `owner` holds a table."""
    with _locked():
        _ensure_bridge_locked()
        if bridge_forwarding() and not _hairpin_tables():
            return False
        tools.require(["nft"], needed_by="a client on the bridge reaching published ports")
        _nft(hairpin_rules(owner + HAIRPIN_SUFFIX))
        Path(FORWARDING.format(BRIDGE)).write_text("1\n")
    return True


def disable_hairpin(owner: str) -> None:
    """Undo `enable_hairpin`: drop the owner's table; forwarding off once no table is left."""
    with _locked():
        subprocess.run(
            ["nft", "delete", "table", "ip", owner + HAIRPIN_SUFFIX], capture_output=True
        )
        _hairpin_off_if_unused_locked()


def _hairpin_tables() -> list[str]:
    return [t for t in nft_tables() if t.endswith(HAIRPIN_SUFFIX)]


def _hairpin_off_if_unused_locked() -> None:
    if link_exists(BRIDGE) and not _hairpin_tables():
        with contextlib.suppress(OSError):
            Path(FORWARDING.format(BRIDGE)).write_text("0\n")


# --- published ports (nftables DNAT) -------------------------------------------------------
def port_free(port: int, address: str = "0.0.0.0") -> bool:
    """True if nothing on the host listens on `port` (TCP) — a published port must be free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def nat_rules(
    table: str,
    host_ip: str,
    host_port: int,
    dest_ip: str,
    dest_port: int,
    bridge: str = BRIDGE,
    hairpin: bool = True,
) -> str:
    """An nft script: DNAT host_ip:host_port -> dest_ip:dest_port for local and routed traffic.

    A client on the bridge itself (a load generator in its own netns, serving/netpath.py)
    reaches the published port through the host and back out of the same bridge; the
    destination would answer it directly over the bridge, from an address the client never
    called. Masquerading exactly that hairpin (in and out of the bridge, DNATed) sends the
    answer back through the host, as the host's own client sees it (source: the gateway).
    `hairpin` False leaves that chain out: inside a VM guest no client sits on the bridge, and
    the guest kernel has no conntrack expressions for nft (`ct status`: No such file)."""
    rules = "\n".join(
        f"    ip daddr {host_ip} {proto} dport {host_port} dnat to {dest_ip}:{dest_port}"
        for proto in PROTOCOLS
    )
    masquerade = "\n".join(
        f'    iifname "{bridge}" oifname "{bridge}" ip daddr {dest_ip} {proto} dport {dest_port}'
        " ct status dnat masquerade"
        for proto in PROTOCOLS
    )
    chains = []
    for chain, hook in (("output", "output"), ("prerouting", "prerouting")):
        chains.append(
            f"  chain {chain} {{\n"
            f"    type nat hook {hook} priority -100; policy accept;\n{rules}\n  }}"
        )
    if hairpin:
        chains.append(
            "  chain postrouting {\n"
            f"    type nat hook postrouting priority 100; policy accept;\n{masquerade}\n  }}"
        )
    return f"table ip {table} {{\n" + "\n".join(chains) + "\n}\n"


def publish(owner: str, host_port: int, dest_ip: str, dest_port: int) -> tuple[str, int]:
    """Publish dest_ip:dest_port at GATEWAY:host_port; returns the host address to use.

    One nft table per owner and port (`vb-xxxxxx-<port>`) so removal is one command.
    """
    tools.require(["nft"], needed_by="network = nat (published ports)")
    if not 1 <= host_port <= 65535:
        raise PlatformError(f"published port {host_port} out of range 1..65535")
    if not port_free(host_port):
        raise PlatformError(
            f"port {host_port} is already taken on the host; pick another "
            "publish_port_offset or stop what listens there"
        )
    table = f"{owner}-{host_port}"
    # a stale table of the same name (same owner, same port) is replaced, never duplicated
    subprocess.run(["nft", "delete", "table", "ip", table], capture_output=True)
    _nft(nat_rules(table, GATEWAY, host_port, dest_ip, dest_port))
    return GATEWAY, host_port


def nft_tables(prefix: str = NAME_PREFIX) -> list[str]:
    r = subprocess.run(["nft", "-j", "list", "tables"], capture_output=True, text=True)
    if r.returncode != 0:
        return []
    try:
        items = json.loads(r.stdout).get("nftables", [])
    except ValueError:
        return []
    return [
        i["table"]["name"]
        for i in items
        if "table" in i
        and i["table"].get("family") == "ip"
        and i["table"]["name"].startswith(prefix)
    ]


def unpublish(owner: str) -> None:
    for table in nft_tables(owner + "-"):
        subprocess.run(["nft", "delete", "table", "ip", table], capture_output=True)


# --- cleanup -------------------------------------------------------------------------------
def _owner_of(name: str) -> str:
    """vb-1a2b3c-h -> vb-1a2b3c (instance names have no further dash)."""
    rest = name[len(NAME_PREFIX) :]
    return NAME_PREFIX + rest.split("-", 1)[0]


def _judge(what: str, name: str, removed: list[str]) -> bool:
    """Whether to remove `name`: only when its owner's claim says that owner is gone; what
    has no record (a user's vb-named netns, link or table) is left alone and said so."""
    state = cleanup.owner(_owner_of(name))
    if state == cleanup.NO_RECORD:
        removed.append(cleanup.left_alone(f"{what} {name}"))
    return state == cleanup.DEAD


@cleanup.register("network")
def clean() -> list[str]:
    """Remove vb- netns, links and nft tables whose owner's claim says it died, and leases
    (in virtbench's own state directory) whose owner is not running."""
    removed: list[str] = []
    if tools.which("ip") is None:
        return removed
    with _locked():
        if NETNS_DIR.is_dir():
            for ns in sorted(NETNS_DIR.iterdir()):
                if ns.name.startswith(NAME_PREFIX) and _judge("netns", ns.name, removed):
                    delete_netns(ns.name)
                    removed.append(f"netns {ns.name}")
        for link in sorted(Path("/sys/class/net").iterdir()):
            if (
                link.name.startswith(NAME_PREFIX)
                and link.name != BRIDGE
                and _judge("link", link.name, removed)
            ):
                delete_link(link.name)
                removed.append(f"link {link.name}")
        if tools.which("nft"):
            for table in nft_tables():
                if _judge("nft table ip", table, removed):
                    subprocess.run(["nft", "delete", "table", "ip", table], capture_output=True)
                    removed.append(f"nft table ip {table}")
                    if table.endswith(HAIRPIN_SUFFIX):  # the bridge's forwarding went with it
                        _hairpin_off_if_unused_locked()
        for ip, owner in _leases().items():
            if not cleanup.in_use(owner):
                (IPAM / ip).unlink(missing_ok=True)
                removed.append(f"address lease {ip} ({owner})")
        had_bridge = link_exists(BRIDGE)
        _release_bridge_locked()
        if had_bridge and not link_exists(BRIDGE):
            removed.append(f"bridge {BRIDGE}")
    return removed
