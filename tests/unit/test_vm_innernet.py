"""container@vm networking scripts (pure): hostnet's generators, one layer deeper."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from virtbench import hostnet
from virtbench.platforms.vm import innernet, options
from virtbench.platforms.vm.platform import VmPlatform


def test_nat_bridge_uses_hostnets_lines_with_the_guest_subnet():
    script = innernet.nat_bridge_script()
    assert "link add vb-nat0 type bridge\naddr add 10.214.0.1/24 dev vb-nat0" in script
    assert "ip_forward" in script and "10.213." not in script


def test_guest_nat_subnet_is_not_the_hosts():
    assert not innernet.NAT_SUBNET.overlaps(hostnet.SUBNET)


def test_attach_joins_the_named_bridge_and_gateway():
    script = innernet.attach_script("vb-abc123", "10.213.0.9", "vb-br0", "10.213.0.1", 24)
    assert "ip netns add vb-abc123" in script
    assert "link add vb-abc123-h type veth peer name eth0 netns vb-abc123" in script
    assert "link set vb-abc123-h master vb-br0" in script
    assert "ip -n vb-abc123 -batch -" in script
    assert "addr add 10.213.0.9/24 dev eth0" in script
    assert "route add default via 10.213.0.1" in script


def test_uplink_bridge_moves_the_guest_address_once():
    script = innernet.uplink_bridge_script("10.213.0.4/24", "10.213.0.1")
    assert script.startswith("if [ ! -d /sys/class/net/vb-br0 ]")
    lines = script.splitlines()
    assert lines.index("addr del 10.213.0.4/24 dev eth0") < lines.index(
        "addr add 10.213.0.4/24 dev vb-br0"
    )
    assert "route replace default via 10.213.0.1" in lines


def test_publish_is_hostnets_dnat_on_the_guest_address():
    script = innernet.publish_script("vb-abc123", "10.0.2.15", 30080, "10.214.0.2", 10080)
    assert "nft -f -" in script and "table ip vb-abc123-30080" in script
    assert "ip daddr 10.0.2.15 tcp dport 30080 dnat to 10.214.0.2:10080" in script
    # no bridge client inside a guest, and its kernel has no nft conntrack expressions
    assert "ct status" not in script and "postrouting" not in script


@pytest.mark.skipif(shutil.which("dash") is None, reason="dash not installed")
def test_scripts_are_valid_posix_shell():
    for script in (
        innernet.nat_bridge_script(),
        innernet.nat_lease_script("vb-abc123"),
        innernet.attach_script("vb-abc123", "10.214.0.2", "vb-nat0", "10.214.0.1", 24),
        innernet.uplink_bridge_script("10.213.0.4/24", "10.213.0.1"),
        innernet.publish_script("vb-abc123", "10.0.2.15", 30080, "10.214.0.2", 10080),
        innernet.teardown_script("vb-abc123"),
    ):
        r = subprocess.run(["dash", "-n"], input=script, capture_output=True, text=True)
        assert r.returncode == 0, (r.stderr, script)


def test_vm_options_are_checked_when_the_campaign_loads():
    assert VmPlatform.validate_options({}) == []
    found = dict((k, a) for k, _p, a in VmPlatform.validate_options({"vcpus": 999, "disk_gb": 0}))
    assert set(found) == {"vcpus", "disk_gb"}
    assert found["disk_gb"] == "an integer 1..1024 GiB"
    assert options.problems("x", {"cpu_quota_us": 5})[0].key == "cpu_quota_us"
