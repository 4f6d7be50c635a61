"""client_path (issue 11): which address each platform's server binds and its client uses,
the path every sample records, and no ratio across two paths (normalize, compare, report)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from virtbench import hostnet
from virtbench.analysis import compare as cmp
from virtbench.analysis import normalize
from virtbench.analysis.groups import Group, GroupKey
from virtbench.analysis.stats import summarize
from virtbench.campaign import loader
from virtbench.errors import CampaignError, WorkloadError
from virtbench.report.core import results as report_results
from virtbench.serving import netpath
from virtbench.workloads import network

GW = hostnet.GATEWAY


class _Plat:
    """A platform as netpath sees it: its name and the address its server binds."""

    def __init__(self, name: str, listen: str | None) -> None:
        self.name = name
        self._listen = listen

    def listen_address(self) -> str | None:
        return self._listen


NATIVE = _Plat("native", "127.0.0.1")  # also a host-network container
BRIDGED = _Plat("crun-bridge", "10.213.0.7")
NAT = _Plat("crun-nat", "10.213.0.8")  # endpoint: the gateway's published port
QEMU_USER = _Plat("vm-user", "10.0.2.15")  # endpoint: a QEMU forward on 127.0.0.1
DOCKER_BRIDGE = _Plat("docker-bridge", None)  # endpoint: Docker's own network


def ctx(path: str | None = None, remote=None):
    params = {} if path is None else {"client_path": path}
    return SimpleNamespace(params=params, remote=remote)


@pytest.mark.parametrize(
    ("plat", "endpoint", "path", "reached", "listen", "kind"),
    [
        (NATIVE, "127.0.0.1", "host", "127.0.0.1", "127.0.0.1", "loopback"),
        (NATIVE, "127.0.0.1", "loopback", "127.0.0.1", "127.0.0.1", "loopback"),
        (NATIVE, "127.0.0.1", "bridge", GW, GW, "bridge"),
        (BRIDGED, "10.213.0.7", "host", "10.213.0.7", "10.213.0.7", "host-bridge"),
        (BRIDGED, "10.213.0.7", "bridge", "10.213.0.7", "10.213.0.7", "bridge"),
        (NAT, GW, "host", GW, "10.213.0.8", "host-bridge"),
        (NAT, GW, "bridge", GW, "10.213.0.8", "bridge"),
        (QEMU_USER, "127.0.0.1", "host", "127.0.0.1", "10.0.2.15", "loopback"),
    ],
)
def test_addresses_per_platform_and_path(plat, endpoint, path, reached, listen, kind):
    c = ctx(path)
    assert netpath.reach(plat, endpoint, c) == reached
    assert netpath.listen_address(plat, c) == listen
    assert netpath.kind(endpoint, c) == kind


def test_default_is_the_hosts_own_network():
    assert netpath.requested(ctx()) == "host"
    assert netpath.listen_address(NATIVE, ctx()) == "127.0.0.1"
    assert netpath.kind("127.0.0.1", ctx()) == "loopback"


@pytest.mark.parametrize(
    ("plat", "endpoint", "path", "words"),
    [
        (BRIDGED, "10.213.0.7", "loopback", "not over loopback"),
        (QEMU_USER, "127.0.0.1", "bridge", "forwarder on the host's loopback"),
        (DOCKER_BRIDGE, "172.18.0.2", "bridge", "not on virtbench's bridge"),
    ],
)
def test_paths_that_cannot_reach_a_platform_say_why(plat, endpoint, path, words):
    with pytest.raises(WorkloadError, match=words) as e:
        netpath.reach(plat, endpoint, ctx(path))
    assert plat.name in str(e.value) and "client_path" in str(e.value)


def test_a_client_host_is_its_own_path():
    c = ctx("bridge", remote=object())
    assert netpath.kind("127.0.0.1", c) == "remote"
    assert netpath.listen_address(NATIVE, c) is None  # the client host reaches every address
    assert netpath.reach(NATIVE, "127.0.0.1", c) == "127.0.0.1"  # mapped by the client host
    assert netpath.wrap(["iperf3"], c) == ["iperf3"]


def test_a_bridge_client_runs_in_its_netns(monkeypatch):
    ns = netpath.ClientNetns("vb-abc123", "10.213.0.9")
    monkeypatch.setattr(netpath, "client_netns", lambda: ns)
    argv = netpath.wrap(["iperf3", "-c", GW], ctx("bridge"))
    # nsenter execs the tool in place: wait4 on it is the tool's own CPU time
    assert argv == ["nsenter", "--net=/run/netns/vb-abc123", "--", "iperf3", "-c", GW]
    assert netpath.wrap(["iperf3"], ctx("host")) == ["iperf3"]


def test_client_path_is_a_checked_suite_option():
    text = """
[campaign]
name = "x"
[[platforms]]
name = "native"
type = "native"
[suites.network]
test_cases = ["iperf3-tcp"]
client_path = "%s"
"""
    c = loader.parse(text % "bridge", "c.toml")
    assert c.tests[0].params["client_path"] == "bridge"
    with pytest.raises(CampaignError, match="client_path"):
        loader.parse(text % "wifi", "c.toml")
    assert network.Iperf3Tcp.params["client_path"].default == "host"
    assert "net_path" in network.Iperf3Tcp.dimension_labels


def test_every_sample_of_a_run_carries_its_path():
    w = network.Iperf3Tcp()
    w.label_all(net_path="bridge")
    s = w.sample("throughput", 1.0, streams=1)
    assert s.labels == {"net_path": "bridge", "streams": 1}


def test_nat_rules_masquerade_only_the_bridge_hairpin():
    rules = hostnet.nat_rules("vb-x-1", GW, 30000, "10.213.0.8", 10000)
    assert f"ip daddr {GW} tcp dport 30000 dnat to 10.213.0.8:10000" in rules
    hairpin = (
        f'iifname "{hostnet.BRIDGE}" oifname "{hostnet.BRIDGE}" ip daddr 10.213.0.8 tcp dport'
        " 10000 ct status dnat masquerade"
    )
    assert hairpin in rules and "hook postrouting" in rules
    fwd = hostnet.hairpin_rules("vb-x-fwd")
    assert f'iifname "{hostnet.BRIDGE}" oifname != "{hostnet.BRIDGE}" drop' in fwd


# --- no ratio across paths ----------------------------------------------------------------
def group(platform: str, values, path: str | None, in_dims: bool = True) -> Group:
    dims = (("net_path", path),) if in_dims and path is not None else ()
    g = Group(GroupKey(platform, "network", "iperf3-tcp", "solo", "target", "throughput", dims),
              "Mbit/s", True, True)  # fmt: skip
    g.values = [float(v) for v in values]
    g.summary = summarize(g.values)
    if path is not None:
        g.labels = {"net_path": path}
    return g


def test_no_ratio_to_a_baseline_measured_over_another_path():
    gs = [
        group("native", [30000, 31000, 30500], "loopback"),
        group("crun-host", [29000, 29500, 30000], "loopback"),
        group("vm", [880, 890, 900], "host-bridge"),
    ]
    ratios = normalize.against_baseline(gs, "native")
    assert gs[1].key in ratios and gs[2].key not in ratios
    why = normalize.incomparable(gs, "native")
    assert list(why) == [gs[2].key]
    assert (
        "net_path=loopback" in why[gs[2].key] and "vm over net_path=host-bridge" in why[gs[2].key]
    )


def test_one_path_for_all_gives_every_ratio():
    gs = [group(p, v, "bridge", in_dims=False) for p, v in
          (("native", [9000, 9100, 9050]), ("vm", [880, 890, 900]))]  # fmt: skip
    assert gs[1].key in normalize.against_baseline(gs, "native")
    assert normalize.incomparable(gs, "native") == {}


def test_compare_pairs_across_paths_and_refuses_the_verdict():
    a = group("native", [100, 101, 99], "loopback", in_dims=False)
    b = group("native", [50, 51, 49], "bridge", in_dims=True)
    outcomes, pairing = cmp.compare_groups([a], [b])
    assert not pairing.only_a and not pairing.only_b
    (o,) = outcomes
    assert o.verdict == cmp.UNDECIDED and o.reason.startswith("not comparable")
    assert "net_path=loopback" in o.reason and "net_path=bridge" in o.reason
    a5 = group("native", [100, 101, 99, 100, 100.5], "loopback", in_dims=False)
    same = group("native", [50, 51, 49, 50, 50.5], "loopback", in_dims=False)
    assert cmp.judge_all([(a5, same)])[0].verdict == cmp.SLOWER


def test_report_shows_why_a_ratio_is_missing():
    gs = [
        group("native", [30000, 31000, 30500], "loopback"),
        group("vm", [880, 890], "host-bridge"),
    ]
    data = SimpleNamespace(
        baseline="native",
        comparisons=normalize.against_baseline(gs, "native"),
        incomparable=normalize.incomparable(gs, "native"),
    )
    cells = report_results.ratio_cells(data, gs[1])
    assert "not comparable" in str(cells[0].content)
    # its reason once per cell (on the badge), not again as the cell's title
    assert str(cells[0].content).count("host-bridge") == 1 and not cells[0].title
    note = str(report_results.path_note(data, gs))
    assert "No ratio to the baseline" in note and "host-bridge" in note
    assert "No ratio" not in str(report_results.path_note(data, gs[:1]))
    assert "net_path=loopback for every platform" in str(report_results.path_note(data, gs[:1]))
    assert report_results.paths_text(gs) == (
        "Client paths differ: net_path=host-bridge: vm; net_path=loopback: native"
        " (docs/network.md)."
    )


def test_no_ratio_between_loads_relative_to_each_platforms_own_peak():
    # identical:load=50 offered each platform 50 % of ITS solo peak: both served everything,
    # so native 15,000 vs vm 800 would read as "vm ×0.05", the ratio of the peaks
    gs = [
        group("native", [15000, 15100], "bridge", False),
        group("vm", [800, 810], "bridge", False),
    ]
    for g in gs:
        g.labels["load_pct"] = 50
    assert gs[1].key not in normalize.against_baseline(gs, "native")
    why = normalize.incomparable(gs, "native")
    assert list(why) == [gs[1].key] and why[gs[1].key].startswith(normalize.OWN_PEAK)
    assert "50 % of its own solo peak" in why[gs[1].key]
