"""Mechanisms a run's own labels show, said in a finding's reason where they differ from the
paper's: how the client of a NAT platform reached its server.

Docker relays a published port two ways: connections that arrive from another host are
DNATed by the kernel (iptables), while with its userland proxy (`docker_nat =
"userland-proxy"`, Docker's default) connections from the host itself go through
docker-proxy, a user-space process that copies every byte of every connection. A client on
the host (net_path loopback) behind the proxy pays that relay; the papers' clients sat on
another host and never did."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import labelkeys as K

if TYPE_CHECKING:
    from ..report.data import ReportData

HOW = {
    "userland-proxy": "docker-proxy, a user-space relay of every connection",
    "iptables": "the kernel's DNAT (iptables)",
}
VIRTBENCH_NAT = "the kernel's DNAT (virtbench's nftables)"


def nat_path(data: ReportData, suite: str, platform: str) -> str:
    """How `platform`'s client reached it, if it is a NAT platform ("" otherwise)."""
    mine = data.platform_labels().get(platform) or {}
    if mine.get(K.NETWORK) != "nat":
        return ""
    paths = _paths(data, suite, platform)
    where = "a client host" if "remote" in paths else "this host"  # no label: the host's
    return (
        f"{platform}'s client ran on {where} (net_path {', '.join(sorted(paths)) or '?'}) and"
        f" reached it through {how(mine)}"
    )


def other_nats(data: ReportData, platform: str) -> dict[str, str]:
    """The run's other NAT platforms -> how their clients reached them (the mechanism measured
    side by side, e.g. docker-proxy against the kernel's DNAT)."""
    return {
        name: how(lab)
        for name, lab in data.platform_labels().items()
        if name != platform and lab.get(K.NETWORK) == "nat"
    }


def how(labels: dict) -> str:
    mode = labels.get(K.DOCKER_NAT)
    if labels.get(K.RUNTIME) == "docker":
        return HOW.get(str(mode), f"docker_nat = {mode}")
    return VIRTBENCH_NAT


def _paths(data: ReportData, suite: str, platform: str) -> set[str]:
    return {
        str(g.key.dim(K.NET_PATH) or g.labels.get(K.NET_PATH))
        for g in data.groups
        if g.key.platform == platform and g.key.suite == suite and g.key.role == "target"
        if g.key.dim(K.NET_PATH) or g.labels.get(K.NET_PATH)
    }
