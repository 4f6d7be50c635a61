"""LXC: OCI config -> LXC container config (v1 and v2 cgroup keys, every option), argv of
lxc-start/lxc-attach, option validation, missing-tool message."""

import json
from pathlib import Path

import pytest

from virtbench import hostnet, tools
from virtbench.errors import MissingToolError, PlatformError
from virtbench.platforms.container import lxc, runtimes, spec
from virtbench.platforms.container import platform as cp
from virtbench.platforms.container.options import ContainerOptions

ROOTFS = "/var/lib/virtbench/containers/vb-1/rootfs"
ALL = spec.Resources(
    cpu_weight=256,
    cpu_quota_us=50000,
    cpu_period_us=100000,
    cpuset_cpus=[1],
    memory_limit_bytes=512 << 20,
    pids_max=100,
    realtime_runtime_us=950000,
    realtime_period_us=1000000,
)
NET = hostnet.Attachment("vb-1", "", "vb-1-h", "10.213.0.7")


def _config(**kw):
    return spec.build(
        spec.ContainerSpec(
            args=["sleep", "infinity"],
            rootfs=ROOTFS,
            hostname="vb-1",
            cgroups_path="/virtbench/vb-1",
            **kw,
        )
    )


def _text(config, network="host", net=None, version="v1", memsw=True):
    return lxc.config_text(
        config,
        network=network,
        net=net,
        pid_dir=Path("/b/pids"),
        cgroup_version=version,
        memsw=memsw,
    )


def test_v1_config_carries_every_option():
    text = _text(_config(resources=ALL, binds=[spec.Bind("/v", "/data")], nofile=20000))
    lines = text.splitlines()
    for line in (
        "lxc.uts.name = vb-1",
        f"lxc.rootfs.path = dir:{ROOTFS}",
        "lxc.apparmor.profile = unconfined",
        "lxc.cgroup.dir = virtbench/vb-1",
        "lxc.cgroup.cpu.shares = 256",
        "lxc.cgroup.cpu.cfs_period_us = 100000",
        "lxc.cgroup.cpu.cfs_quota_us = 50000",
        "lxc.cgroup.cpuset.cpus = 1",
        f"lxc.cgroup.memory.limit_in_bytes = {512 << 20}",
        f"lxc.cgroup.memory.memsw.limit_in_bytes = {512 << 20}",
        "lxc.cgroup.pids.max = 100",
        "lxc.cgroup.cpu.rt_period_us = 1000000",
        "lxc.cgroup.cpu.rt_runtime_us = 950000",
        "lxc.mount.entry = /v data none rbind,create=dir 0 0",
        "lxc.mount.entry = /b/pids .vb-pids none bind,create=dir 0 0",
        "lxc.prlimit.nofile = 20000:20000",
        f"lxc.environment = {spec.PATH_ENV}",
        "lxc.init.cwd = /",
        "lxc.net.0.type = none",
    ):
        assert line in lines, line
    # the rt period is set before the runtime (the kernel checks runtime <= period)
    assert lines.index("lxc.cgroup.cpu.rt_period_us = 1000000") < lines.index(
        "lxc.cgroup.cpu.rt_runtime_us = 950000"
    )
    keep = next(ln for ln in lines if ln.startswith("lxc.cap.keep = ")).split(" = ")[1].split()
    assert "sys_nice" in keep and "net_bind_service" in keep and "sys_admin" not in keep
    assert not any("cgroup2" in ln for ln in lines)


def test_v2_config_uses_cgroup2_keys():
    lines = _text(_config(resources=ALL), version="v2").splitlines()
    for line in (
        "lxc.cgroup2.cpu.weight = 10",  # 256 shares, converted as crun converts them
        "lxc.cgroup2.cpu.max = 50000 100000",
        "lxc.cgroup2.cpuset.cpus = 1",
        f"lxc.cgroup2.memory.max = {512 << 20}",
        "lxc.cgroup2.memory.swap.max = 0",
        "lxc.cgroup2.pids.max = 100",
    ):
        assert line in lines, line
    assert not any(ln.startswith("lxc.cgroup.cpu") for ln in lines)
    assert not any("rt_runtime" in ln for ln in lines)  # no RT group scheduling on v2


def test_v2_period_without_quota_is_unlimited():
    res = spec.Resources(cpu_period_us=50000)
    assert lxc.cgroup_lines(res.to_oci(), "v2") == ["lxc.cgroup2.cpu.max = max 50000"]


def test_no_limits_no_cgroup_keys_and_no_memsw_without_swap_accounting():
    assert lxc.cgroup_lines(spec.Resources().to_oci(), "v1") == []
    lines = lxc.cgroup_lines(spec.Resources(memory_limit_bytes=1 << 30).to_oci(), "v1", False)
    assert lines == [f"lxc.cgroup.memory.limit_in_bytes = {1 << 30}"]


@pytest.mark.parametrize("network", ["bridge", "nat"])
def test_bridge_and_nat_plug_lxc_veth_into_virtbench_bridge(network):
    lines = _text(_config(), network=network, net=NET).splitlines()
    assert "lxc.net.0.type = veth" in lines
    assert f"lxc.net.0.link = {hostnet.BRIDGE}" in lines
    assert "lxc.net.0.veth.pair = vb-1-h" in lines
    assert f"lxc.net.0.ipv4.address = 10.213.0.7/{hostnet.SUBNET.prefixlen}" in lines
    assert f"lxc.net.0.ipv4.gateway = {hostnet.GATEWAY}" in lines
    assert "lxc.net.0.type = none" not in lines
    assert not any("lxcbr0" in ln for ln in lines)  # never lxc-net's bridge


def test_bridge_without_an_address_is_refused():
    with pytest.raises(PlatformError, match="needs an address on vb-br0"):
        _text(_config(), network="bridge", net=None)


def test_run_argv_writes_config_under_virtbench_lxcpath(tmp_path, monkeypatch):
    monkeypatch.setattr(lxc, "LXCPATH", tmp_path / "lxcpath")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps(_config()))
    rt = runtimes.get("lxc", "host")
    argv = rt.run_argv("vb-1", bundle, detach=True)
    log = tmp_path / "lxcpath/vb-1/lxc.log"
    assert argv[:2] == ["sh", "-c"] and argv[3] == "sh"
    # one retry of a failed detached start, said on stderr; then the log's reason
    assert "retrying" in argv[2] and argv[2].endswith(f"{{ s=$?; cat {log} >&2; exit $s; }}")
    assert argv[4:9] == ["lxc-start", "-P", str(tmp_path / "lxcpath"), "-n", "vb-1"]
    assert "-d" in argv and argv[argv.index("--") + 1 :] == ["sleep", "infinity"]
    fg = rt.run_argv("vb-1", bundle, detach=False)
    assert fg[0] == "lxc-start" and "-F" in fg and fg[-2:] == ["sleep", "infinity"]
    text = (tmp_path / "lxcpath/vb-1/config").read_text()
    assert "lxc.apparmor.profile = unconfined" in text
    assert (bundle / "pids").is_dir()
    assert rt.list_ids() == ["vb-1"] or tools.which("lxc-start") is None


def test_exec_attaches_with_config_env_and_records_pid(tmp_path, monkeypatch):
    monkeypatch.setattr(lxc, "LXCPATH", tmp_path)
    (tmp_path / "vb-1").mkdir()
    (tmp_path / "vb-1/config").write_text("lxc.environment = PATH=/bin\nlxc.uts.name = x\n")
    rt = runtimes.get("lxc")
    argv = rt.exec_argv("vb-1", ["sysbench", "cpu", "run"], {"A": "1"}, "/b/exec-3.pid")
    assert argv[:6] == ["lxc-attach", "-P", str(tmp_path), "-n", "vb-1", "--clear-env"]
    assert argv[6:10] == ["-v", "PATH=/bin", "-v", "A=1"]
    i = argv.index("--")
    assert argv[i + 1 :] == [
        "sh",
        "-c",
        'echo $$ > /.vb-pids/exec-3.pid; exec "$@"',
        "sh",
        "sysbench",
        "cpu",
        "run",
    ]
    assert rt.host_pid_file("/b/exec-3.pid") == "/b/pids/exec-3.pid"
    assert rt.exec_argv("vb-1", ["true"], None, None)[-2:] == ["--", "true"]


def test_host_network_needs_no_address():
    assert runtimes.get("lxc", "host").plug("vb-1") == (None, None)


def test_missing_lxc_names_the_package(monkeypatch):
    monkeypatch.setattr(tools, "which", lambda name: None)
    with pytest.raises(MissingToolError, match="apt-get install lxc"):
        runtimes.get("lxc").prepare()
    assert not tools.TOOLS["lxc-start"].optional  # setup (install.sh) installs it


def test_delete_of_a_missing_container_is_quiet(tmp_path, monkeypatch):
    monkeypatch.setattr(lxc, "LXCPATH", tmp_path)
    runtimes.get("lxc").delete("vb-gone")  # no error, nothing to do


def test_options_accept_lxc_and_list_it_when_wrong():
    assert cp.ContainerPlatform.validate_options({"runtime": "lxc", "network": "nat"}) == []
    o = ContainerOptions.parse({"runtime": "lxc", "storage": "volume", "cpu_weight": 256})
    assert o.runtime == "lxc" and o.resources.cpu_weight == 256
    problems = cp.ContainerPlatform.validate_options({"runtime": "lxd"})
    assert problems[0][0] == "runtime" and "lxc" in problems[0][2]


def test_doctor_says_what_lxc_cannot_do_here(monkeypatch, tmp_path):
    monkeypatch.setattr(lxc, "APPARMOR", tmp_path / "none")
    monkeypatch.setattr(tools, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(tools, "version", lambda name: "5.0.2")
    check = lxc.doctor_check()
    assert check.status == "warn"
    assert "lxc.apparmor.profile = unconfined" in check.detail
    assert "AppArmor is not enabled in this kernel" in check.detail
    assert "lxc-net" in check.detail and hostnet.BRIDGE in check.detail
    monkeypatch.setattr(tools, "which", lambda name: None)
    check = lxc.doctor_check()
    assert check.status == "missing" and check.fix == "apt-get install lxc"
