"""Networking for a container inside a VM guest (container@vm), made through the guest's exec.

The container platform's modes, one layer deeper, built from the same `hostnet` generators:

- `bridge`: the guest's eth0 becomes a port of a bridge in the guest and the container's veth
  joins it, so the container sits on the host's virtbench subnet with its own address from the
  host's address pool and the host reaches it directly (seed 000's bridged container in a VM).
  Needs the VM on the host bridge (VM network bridge or nat), not QEMU user mode.
- `nat`: a bridge inside the guest with its own private subnet (docker0 in the VM) and an
  nftables DNAT in the guest from the guest's address, port + offset, to the container
  (`docker run -p` inside the VM); the host reaches that port through the VM's own endpoint
  (the tap address, the host's DNAT, or a QEMU host forward in user mode).

Guest objects vanish with the VM; teardown removes them anyway so a VM may host containers
one after another. On the host only the address lease of a bridged container exists.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass

from ... import hostnet

UPLINK_BRIDGE = "vb-br0"  # bridge mode: the guest's eth0 and the containers' veths
NAT_BRIDGE = "vb-nat0"  # nat mode: guest-internal, like docker0
NAT_SUBNET = ipaddress.ip_network("10.214.0.0/24")  # only inside guests; never on the host
NAT_GATEWAY = str(NAT_SUBNET.network_address + 1)
GUEST_IPAM = "/run/vb/ipam"  # nat-mode leases inside the guest (one directory per address)
NETNS_DIR = "/run/netns"


def _batch(lines: list[str], netns: str | None = None) -> str:
    """A shell line feeding `lines` to one `ip -batch` (in `netns` if given)."""
    where = f"-n {shlex.quote(netns)} " if netns else ""
    body = "\n".join(lines)
    return f"ip {where}-batch - <<'VB_EOF'\n{body}\nVB_EOF"


def uplink_bridge_script(guest_cidr: str, gateway: str) -> str:
    """Make eth0 a port of UPLINK_BRIDGE, moving the guest's address and default route onto
    the bridge (idempotent: a second container finds it done). The bridge takes eth0's MAC,
    so the host's neighbour entry for the guest stays valid."""
    lines = [
        f"link add {UPLINK_BRIDGE} type bridge",
        f"link set {UPLINK_BRIDGE} address $mac",
        f"link set eth0 master {UPLINK_BRIDGE}",
        f"addr del {guest_cidr} dev eth0",
        f"addr add {guest_cidr} dev {UPLINK_BRIDGE}",
        f"link set {UPLINK_BRIDGE} up",
        f"route replace default via {gateway}",
    ]
    body = "\n".join(lines)
    # unquoted heredoc: $mac is expanded by the shell
    return (
        f"if [ ! -d /sys/class/net/{UPLINK_BRIDGE} ]; then\n"
        "  mac=$(cat /sys/class/net/eth0/address)\n"
        f"  ip -batch - <<VB_EOF\n{body}\nVB_EOF\n"
        "fi"
    )


def nat_bridge_script() -> str:
    """NAT_BRIDGE with the gateway address, and forwarding on (idempotent)."""
    make = _batch(hostnet.bridge_commands(NAT_BRIDGE, NAT_GATEWAY, NAT_SUBNET.prefixlen, None))
    return (
        f"if [ ! -d /sys/class/net/{NAT_BRIDGE} ]; then\n{make}\nfi\n"
        "echo 1 > /proc/sys/net/ipv4/ip_forward"
    )


def nat_lease_script(owner: str) -> str:
    """Take the first free NAT_SUBNET address (mkdir is atomic) and print it."""
    first = ".".join(str(NAT_SUBNET.network_address).split(".")[:3])
    last = NAT_SUBNET.num_addresses - 2
    return (
        f"mkdir -p {GUEST_IPAM}\n"
        f"for i in $(seq 2 {last}); do\n"
        f"  if mkdir {GUEST_IPAM}/{first}.$i 2>/dev/null; then\n"
        f"    echo {shlex.quote(owner)} > {GUEST_IPAM}/{first}.$i/owner; echo {first}.$i; exit 0\n"
        "  fi\n"
        "done\n"
        f"echo 'no free address left in {NAT_SUBNET} inside the guest' >&2; exit 1"
    )


def attach_script(owner: str, address: str, bridge: str, gateway: str, prefixlen: int) -> str:
    """A named netns for the container, plugged into `bridge` by a veth (hostnet's lines)."""
    host_if, _peer = hostnet.veth_names(owner)
    outside, inside = hostnet.attach_commands(
        host_if, owner, "eth0", address, bridge=bridge, gateway=gateway, prefixlen=prefixlen
    )
    return "\n".join(
        [
            "set -e",
            f"ip netns add {shlex.quote(owner)}",
            "ip -n " + shlex.quote(owner) + " link set lo up",
            _batch(outside),
            _batch(inside, netns=owner),
        ]
    )


def publish_script(owner: str, guest_ip: str, outer_port: int, dest_ip: str, port: int) -> str:
    """nft DNAT in the guest: guest_ip:outer_port -> dest_ip:port (hostnet's rules)."""
    table = f"{owner}-{outer_port}"
    rules = hostnet.nat_rules(table, guest_ip, outer_port, dest_ip, port, hairpin=False)
    return f"nft delete table ip {table} 2>/dev/null\nnft -f - <<'VB_EOF'\n{rules}VB_EOF"


def teardown_script(owner: str) -> str:
    """Remove the container's netns, veth, DNAT tables and guest lease (never fails)."""
    host_if, _peer = hostnet.veth_names(owner)
    o = shlex.quote(owner)
    return "\n".join(
        [
            f"ip netns del {o} 2>/dev/null",
            f"ip link del {host_if} 2>/dev/null",
            "command -v nft >/dev/null && nft list tables 2>/dev/null | "
            'while read -r _t fam name; do case "$name" in '
            f'{o}-*) nft delete table "$fam" "$name";; esac; done',
            f"grep -lx {o} {GUEST_IPAM}/*/owner 2>/dev/null | "
            'while read -r f; do rm -rf "${f%/owner}"; done',
            "true",
        ]
    )


@dataclass
class InnerAttachment:
    """What a container's network inside the guest is: its mode, address and netns path."""

    mode: str  # bridge | nat
    address: str
    netns: str  # path inside the guest, for the OCI spec
    host_lease: bool = False  # bridge mode: the address is leased from the host's pool
