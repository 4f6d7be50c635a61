"""podman: OCI config -> `podman run` flags, pid translation, missing-tool message."""

import pytest

from virtbench import tools
from virtbench.errors import MissingToolError
from virtbench.platforms.container import podman, runtimes, spec


def _config(**kw):
    return spec.build(
        spec.ContainerSpec(
            args=["sleep", "infinity"],
            rootfs="/var/lib/virtbench/containers/vb-1/rootfs",
            hostname="vb-1",
            cgroups_path="/virtbench/vb-1",
            **kw,
        )
    )


def test_run_flags_carry_limits_network_and_binds():
    res = spec.Resources(
        cpu_weight=256,
        cpu_quota_us=50000,
        cpu_period_us=100000,
        cpuset_cpus=[1],
        memory_limit_bytes=512 << 20,
        pids_max=100,
        realtime_runtime_us=950000,
        realtime_period_us=1000000,
    )
    flags = podman.run_flags(
        _config(
            netns="/run/netns/vb-1",
            resources=res,
            binds=[spec.Bind("/v", "/data")],
            nofile=20000,
        )
    )
    joined = " ".join(flags)
    for part in (
        "--cgroup-parent /virtbench/vb-1",
        "--network ns:/run/netns/vb-1",
        "--volume /v:/data:rw",
        "--cpu-shares 256",
        "--cpu-quota 50000",
        "--cpu-period 100000",
        "--cpuset-cpus 1",
        f"--memory {512 << 20} --memory-swap {512 << 20}",
        "--pids-limit 100",
        "--cpu-rt-runtime 950000 --cpu-rt-period 1000000",
        "--cap-add SYS_NICE",
        "--ulimit nofile=20000:20000",
    ):
        assert part in joined
    assert "--rootfs" not in flags  # it must come last, just before the command


def test_host_network_and_rootfs_last(tmp_path):
    (tmp_path / "config.json").write_text(__import__("json").dumps(_config()))
    argv = runtimes.get("podman").run_argv("vb-1", tmp_path, detach=True)
    assert argv[argv.index("--network") + 1] == "host"
    i = argv.index("--rootfs")
    assert argv[i + 1 :] == ["/var/lib/virtbench/containers/vb-1/rootfs", "sleep", "infinity"]
    assert "--cgroup-manager" in argv and "--detach" in argv


def test_exec_records_the_container_pid_where_the_host_reads_it():
    rt = runtimes.get("podman")
    argv = rt.exec_argv("vb-1", ["sysbench", "cpu", "run"], {"A": "1"}, "/b/exec-3.pid")
    assert argv[-8:] == [
        "vb-1",
        "sh",
        "-c",
        'echo $$ > /.vb-pids/exec-3.pid; exec "$@"',
        "sh",
        "sysbench",
        "cpu",
        "run",
    ]
    assert rt.host_pid_file("/b/exec-3.pid") == "/b/pids/exec-3.pid"


def test_missing_podman_names_the_package(monkeypatch):
    monkeypatch.setattr(tools, "which", lambda name: None)
    with pytest.raises(MissingToolError, match="apt-get install podman"):
        runtimes.get("podman").prepare()
    assert tools.TOOLS["podman"].optional


def test_host_pid_matches_innermost_nspid(monkeypatch, tmp_path):
    import pathlib

    status = {101: "Name:\tsh\nNSpid:\t101\t7\n", 102: "Name:\tsleep\nNSpid:\t102\t9\n"}
    real = pathlib.Path.read_text

    def fake(self, *a, **k):
        for pid, text in status.items():
            if str(self) == f"/proc/{pid}/status":
                return text
        return real(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "read_text", fake)
    assert podman.host_pid(9, [101, 102]) == 102
    assert podman.host_pid(5, [101, 102]) is None
