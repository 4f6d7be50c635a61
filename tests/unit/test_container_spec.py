"""OCI spec, option parsing, nft rules, mirror parsing: pure logic of the container platform."""

import pytest

from virtbench import hostnet
from virtbench.errors import PlatformError
from virtbench.images import rootfs
from virtbench.platforms.container import spec
from virtbench.platforms.container.options import parse_cpus, parse_size, resources_from


def _spec(**kw) -> dict:
    base = dict(
        args=["sleep", "infinity"], rootfs="/r", hostname="vb-x", cgroups_path="/virtbench/vb-x"
    )
    return spec.build(spec.ContainerSpec(**(base | kw)))


def test_host_network_has_no_netns():
    cfg = _spec()
    types = [n["type"] for n in cfg["linux"]["namespaces"]]
    assert "network" not in types and {"pid", "mount", "ipc", "uts"} <= set(types)
    assert cfg["linux"]["cgroupsPath"] == "/virtbench/vb-x"
    assert cfg["root"] == {"path": "/r", "readonly": False}
    assert cfg["process"]["terminal"] is False


def test_netns_path_and_binds():
    cfg = _spec(netns="/run/netns/vb-x", binds=[spec.Bind("/host/vol", "/data")])
    assert {"type": "network", "path": "/run/netns/vb-x"} in cfg["linux"]["namespaces"]
    bind = cfg["mounts"][-1]
    assert bind["source"] == "/host/vol" and bind["destination"] == "/data"
    assert "rbind" in bind["options"]


def test_resources_to_oci():
    r = resources_from(
        {
            "cpu_weight": 256,
            "cpu_quota_us": 50000,
            "cpuset": "0",
            "memory_limit": "64M",
            "pids_max": 10,
        }
    )
    oci = r.to_oci()
    assert oci["cpu"] == {"shares": 256, "quota": 50000, "period": 100000, "cpus": "0"}
    assert oci["memory"] == {"limit": 64 << 20, "swap": 64 << 20}
    assert oci["pids"] == {"limit": 10}


@pytest.mark.parametrize(
    "value,expected", [(1024, 1024), ("512M", 512 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29)]
)
def test_parse_size(value, expected):
    assert parse_size("memory_limit", value) == expected


def test_parse_cpus():
    assert parse_cpus("cpuset", "0-2,5") == [0, 1, 2, 5]
    assert parse_cpus("cpuset", [1, 0, 1]) == [0, 1]
    with pytest.raises(PlatformError, match="CPU list"):
        parse_cpus("cpuset", "a-b")


def test_bad_resource_values_name_allowed():
    with pytest.raises(PlatformError, match="cpu_weight .* allowed: 2..262144"):
        resources_from({"cpu_weight": 1})
    with pytest.raises(PlatformError, match="allowed: bytes > 0 or '512M'"):
        resources_from({"memory_limit": "much"})


def test_nat_rules_cover_local_and_routed_tcp_udp():
    script = hostnet.nat_rules("vb-x-25201", "10.213.0.1", 25201, "10.213.0.2", 5201)
    assert script.startswith("table ip vb-x-25201 {")
    assert "type nat hook output priority -100" in script
    assert "type nat hook prerouting priority -100" in script
    for proto in ("tcp", "udp"):
        assert f"ip daddr 10.213.0.1 {proto} dport 25201 dnat to 10.213.0.2:5201" in script


def test_veth_names_fit_ifnamsiz():
    assert hostnet.veth_names("vb-1a2b3c") == ("vb-1a2b3c-h", "vb-1a2b3c-c")
    with pytest.raises(PlatformError, match="15"):
        hostnet.veth_names("vb-much-too-long-name")
    assert hostnet._owner_of("vb-1a2b3c-25201") == "vb-1a2b3c"


def test_mirror_from_deb822_and_one_line():
    deb822 = (
        "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n"
    )
    assert rootfs.parse_mirror(deb822) == "http://mirror.example/debian"
    assert rootfs.parse_mirror("deb [arch=amd64] http://m.example/debian bookworm main") == (
        "http://m.example/debian"
    )
    assert rootfs.parse_mirror("deb https://packages.cloud.google.com/apt cloud main") is None


def test_image_key_depends_on_packages_only_as_a_set():
    assert rootfs.key(["b", "a"]) == rootfs.key(["a", "b", "a"])
    assert rootfs.key(["a"]) != rootfs.key(["a", "b"])


def test_attach_is_two_ip_batches_peer_created_inside_the_netns():
    host, inside = hostnet.attach_commands("vb-1a2b3c-h", "vb-1a2b3c", "eth0", "10.213.0.7")
    assert host[0] == "link add vb-1a2b3c-h type veth peer name eth0 netns vb-1a2b3c"
    assert host[1:] == ["link set vb-1a2b3c-h master vb-br0", "link set vb-1a2b3c-h up"]
    assert inside == [
        "addr add 10.213.0.7/24 dev eth0",
        "link set eth0 up",
        "route add default via 10.213.0.1",
    ]
    # the bridge's MAC is set (fixed): a bridge whose MAC follows its ports changes the
    # gateway's MAC under every client that learned it when a port leaves
    assert hostnet.bridge_commands()[0] == "link add vb-br0 address 02:76:62:00:00:01 type bridge"
    assert hostnet.bridge_commands("b", "10.0.0.1", 24, None)[0] == "link add b type bridge"
