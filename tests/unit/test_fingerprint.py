"""The comparability gate (analysis/fingerprint.py) and the facts behind it (hostinfo)."""

from __future__ import annotations

from virtbench import hostinfo, netstack
from virtbench.analysis import fingerprint, platform_facts
from virtbench.platforms.base import PlatformSpec
from virtbench.runner import describe

HOST = {
    "cpu_model": "AMD EPYC",
    "microcode": "0x1000065",
    "kernel": "6.1.0",
    "governor": "performance",
    "turbo": "off",
    "smt": "off",
    "virtualization": "none",
    "thp": "madvise",
    "cgroup": "v2",
    "virtbench": "0.1.0",
    "tuned": None,
    "tool_versions": {"sysbench": "1.0.20", "fio": "3.33", "crun": "1.8.1", "runc": "1.1.5"},
    "tools_used": {"sysbench-cpu-1t": ["sysbench"], "fio-rand-read": ["fio"]},
}


def test_same_host_is_comparable():
    gate = fingerprint.compare(HOST, dict(HOST), ["sysbench-cpu-1t"])
    assert gate.comparable and gate.differences == [] and gate.unknown == []


def test_what_matters_and_what_is_a_note():
    b = HOST | {"kernel": "6.12.0", "thp": "always", "governor": None}
    gate = fingerprint.compare(HOST, b, ["sysbench-cpu-1t"])
    assert not gate.comparable
    assert [d.key for d in gate.mattering] == ["kernel", "governor"]
    assert "governor: performance (A) vs not readable (B)" in [d.text for d in gate.differences]
    assert [d.key for d in gate.differences if not d.matters] == ["thp"]
    assert fingerprint.compare(HOST, HOST | {"thp": "always"}).comparable


def test_tool_versions_matter_only_for_the_tools_compared():
    b = HOST | {"tool_versions": HOST["tool_versions"] | {"fio": "3.36", "crun": "1.9"}}
    gate = fingerprint.compare(HOST, b, ["sysbench-cpu-1t"])
    assert gate.comparable  # fio and crun are not used by sysbench-cpu-1t on native
    assert {d.key for d in gate.differences} == {"tool fio", "tool crun"}
    gate = fingerprint.compare(HOST, b, ["fio-rand-read"])
    assert [d.key for d in gate.mattering] == ["tool fio"]
    gate = fingerprint.compare(HOST, b, ["sysbench-cpu-1t"], {"crun"})  # a crun container
    assert [d.key for d in gate.mattering] == ["tool crun"]


def test_the_tcp_stack_matters_to_network_test_cases_only():
    host = HOST | {"tools_used": HOST["tools_used"] | {"httperf-sweep": ["httperf", "nginx"]}}
    cubic = host | {"net_stack": {"tcp_congestion_control": "cubic"}}
    bbr = host | {"net_stack": {"tcp_congestion_control": "bbr"}}
    gate = fingerprint.compare(cubic, bbr, ["httperf-sweep"])
    assert [d.text for d in gate.mattering] == [
        "net_stack: {'tcp_congestion_control': 'cubic'} (A) vs"
        " {'tcp_congestion_control': 'bbr'} (B)"
    ]
    assert fingerprint.compare(cubic, bbr, ["sysbench-cpu-1t"]).comparable  # a note there
    assert fingerprint.compare(host, bbr, ["httperf-sweep"]).comparable  # not recorded in A


def test_the_tcp_stack_is_read_and_recorded_in_host_facts(tmp_path):
    net = netstack.read()
    assert net["tcp_congestion_control"]  # every Linux host has one
    assert len(net["tcp_wmem"].split()) == 3  # min, default, max, one space apart
    assert hostinfo.facts(tool_names=[])["net_stack"] == net
    (tmp_path / "net/ipv4").mkdir(parents=True)
    (tmp_path / "net/ipv4/tcp_wmem").write_text("4096\t16384\t4194304\n")
    assert netstack.read(tmp_path) == {"tcp_wmem": "4096 16384 4194304"}  # absent: left out


def test_doctor_warns_of_bbr_and_names_the_way_back():
    from virtbench import doctor

    check = doctor.tcp_check({"tcp_congestion_control": "bbr", "default_qdisc": "pfifo_fast"})
    assert check.status == "warn" and "pfifo_fast" in check.detail
    assert "virtbench tune" in check.fix and "cubic" in check.fix
    assert doctor.tcp_check({"tcp_congestion_control": "cubic"}).status == "ok"
    assert doctor.tcp_check({}).status == "warn"


def test_old_runs_are_unknown_not_refused():
    old = {k: v for k, v in HOST.items() if k not in ("microcode", "turbo", "tools_used")}
    gate = fingerprint.compare(old, HOST, ["sysbench-cpu-1t"])
    assert gate.comparable
    assert "microcode: unknown in A" in gate.unknown and "turbo: unknown in A" in gate.unknown
    assert any("which tools" in u for u in gate.unknown)
    # without the record of used tools every differing version counts
    b = old | {"tool_versions": old["tool_versions"] | {"fio": "3.36"}}
    assert [d.key for d in fingerprint.compare(old, b, ["sysbench-cpu-1t"]).mattering] == [
        "tool fio"
    ]


def test_platform_tools_of_runs_stored_before_they_were_declared():
    def tools(spec):
        return platform_facts.runtime_tools({}, spec)

    assert tools({"type": "native", "options": {}}) == set()
    assert tools({"type": "container", "options": {}}) == {"crun"}
    assert tools({"type": "container", "options": {"runtime": "podman"}}) == {"podman", "crun"}
    assert tools({"type": "vm"}) == {"qemu-system-x86_64"}
    stacked = {"type": "container", "options": {"runtime": "runc"}, "host": "vm"}
    assert tools(stacked) == {"runc", "qemu-system-x86_64"}


def test_platforms_are_asked_their_tools_and_the_run_keeps_the_answer():
    vm = PlatformSpec("vm", "vm")
    specs = [
        PlatformSpec("native", "native"),
        PlatformSpec("pod", "container", {"runtime": "podman"}),
        PlatformSpec("c@vm", "container", {"runtime": "runc"}, host=vm),
    ]
    host = describe.platform_facts(specs)
    said = host[platform_facts.PLATFORMS]
    assert said["native"] == {"runtime_tools": [], "host_device": True, "mode_defaults": None}
    assert said["pod"] == {
        "runtime_tools": ["crun", "podman"],
        "host_device": False,
        "mode_defaults": {"runtime": "crun", "storage": "overlay", "network": "host"},
    }
    assert said["c@vm"]["runtime_tools"] == ["qemu-system-x86_64", "runc"]
    # analysis reads what the run stored, not the spec's type
    assert platform_facts.runtime_tools(host, {"name": "pod", "type": "vm"}) == {"podman", "crun"}
    on_device = platform_facts.host_device(host)
    assert on_device({"platform": "native"}) and not on_device({"platform": "pod"})


def test_hostinfo_turbo_cpuidle_microcode(monkeypatch):
    files = {
        "/sys/devices/system/cpu/cpufreq/boost": "0",
        "/sys/devices/system/cpu/cpuidle/current_driver": "intel_idle",
        "/sys/devices/system/cpu/cpuidle/current_governor_ro": "menu",
        "/proc/cpuinfo": "processor\t: 0\nmicrocode\t: 0xde\n",
    }
    monkeypatch.setattr(hostinfo, "_read", files.get)
    assert hostinfo.turbo() == "off"
    assert hostinfo.cpuidle() == ("intel_idle", "menu")
    assert hostinfo.microcode() == "0xde"
    files = {"/sys/devices/system/cpu/intel_pstate/no_turbo": "0"}
    monkeypatch.setattr(hostinfo, "_read", files.get)
    assert hostinfo.turbo() == "on" and hostinfo.microcode() is None
    monkeypatch.setattr(hostinfo, "_read", {}.get)
    assert hostinfo.turbo() is None and hostinfo.cpuidle() == (None, None)


def test_runner_records_the_tools_each_test_case_runs():
    from virtbench.runner.describe import tools_used

    used = tools_used(["sysbench-cpu-1t", "wrk-max", "no-such-test"])
    assert used["sysbench-cpu-1t"] == ["sysbench"]
    assert {"wrk", "nginx"} <= set(used["wrk-max"]) and "no-such-test" not in used
    facts = hostinfo.facts(tool_names=[], tools_used=used)
    assert facts["tools_used"] == used and "microcode" in facts and "turbo" in facts


def test_the_report_host_table_shows_the_tcp_stack_and_what_bbr_does():
    from types import SimpleNamespace

    from virtbench.report.core.run import host_section

    def shown(net):
        data = SimpleNamespace(
            host=HOST | {"net_stack": net},
            platforms=[],
            baseline=None,
            platform_labels=dict,
            cells=[],
        )
        return str(host_section(data).html)

    bbr = shown({"tcp_congestion_control": "bbr", "default_qdisc": "pfifo_fast"})
    assert "tcp_congestion_control bbr, default_qdisc pfifo_fast" in bbr
    assert "BBR paces every connection" in bbr
    assert "BBR paces" not in shown({"tcp_congestion_control": "cubic"})
