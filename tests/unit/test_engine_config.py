"""Every cell records its engine's effective configuration (issue 42): runsc's own config dump,
docker info, the LXC config as written, QEMU's command line and QMP answers; the report shows
it without Python None; compare treats a difference there as mattering."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from virtbench import hostnet
from virtbench.analysis import fingerprint
from virtbench.platforms import engine_config
from virtbench.platforms.container import lxc, runtimes, spec
from virtbench.platforms.vm import qemu

DATA = Path(__file__).parent.parent / "data" / "engines"


def test_runsc_debian_config_from_its_debug_log():
    got = engine_config.runsc_config((DATA / "runsc-20221219-debug.log").read_text())
    assert got == {
        "version": "0.0~20221219.0",
        "platform": "ptrace",
        "file_access": "exclusive",
        "overlay2": 'Root=false, SubMounts=false, FilestoreDir=""',
        "network": "host",
        "directfs": engine_config.ABSENT,  # this release has no directfs at all
    }


def test_runsc_go_build_config_from_its_debug_log():
    # gVisor built from its Go module (2026-09-05) with virtbench's --platform=ptrace: every
    # setting is also logged as "Config.Name (--flag): value"; directfs on, root overlay
    got = engine_config.runsc_config((DATA / "runsc-go-20260905-debug.log").read_text())
    assert got == {
        "version": "VERSION_MISSING",  # `go install` stamps none: the build records its own
        "platform": "ptrace",
        "file_access": "exclusive",
        "file_access_mounts": "shared",
        "directfs": "true",
        "overlay2": "root:self",
        "network": "host",
    }
    assert engine_config.runsc_config("no log at all") == {}
    # as virtbench runs a build: its own default platform
    default = (DATA / "runsc-go-20260905-default-debug.log").read_text()
    assert engine_config.runsc_config(default)["platform"] == "systrap"


@pytest.mark.skipif(shutil.which("runsc") is None, reason="runsc not installed")
def test_runsc_runtime_reads_the_flags_it_passes():
    # the real runsc, asked with the flags virtbench runs containers with (one `list`)
    host = runtimes.get("runsc", "host").engine(None)
    sandbox = runtimes.get("runsc", "bridge").engine(None)
    assert host["network"] == "host" and sandbox["network"] == "sandbox"
    assert host["platform"] == "ptrace" and host["version"]


def test_docker_config_from_docker_info():
    info = json.loads((DATA / "docker-info.json").read_text())
    got = engine_config.docker_config(info, userland_proxy=False)
    assert got["storage_driver"] == "overlay2"
    assert got["cgroup_driver"] == "cgroupfs"
    assert got["backing_filesystem"] == "extfs"
    assert got["userland_proxy"] == "off"
    assert None not in got.values()
    assert "userland_proxy" not in engine_config.docker_config({}, None)


def test_lxc_config_keys_as_written_without_per_instance_ones():
    config = spec.build(
        spec.ContainerSpec(
            args=["sleep", "infinity"],
            rootfs="/r/vb-1/rootfs",
            hostname="vb-1",
            cgroups_path="/virtbench/vb-1",
            resources=spec.Resources(cpu_weight=256, pids_max=100),
        )
    )
    net = hostnet.Attachment("vb-1", "", "vb-1-h", "10.213.0.7")
    text = lxc.config_text(
        config, network="bridge", net=net, pid_dir=Path("/p"), cgroup_version="v1"
    )
    got = engine_config.lxc_config(text, "5.0.2")
    assert got["version"] == "5.0.2"
    assert got["lxc.cgroup.cpu.shares"] == "256"
    assert got["lxc.net.0.type"] == "veth" and got["lxc.apparmor.profile"] == "unconfined"
    assert got["lxc.cap.keep"]  # Docker's capability set, as given to LXC
    for key in ("lxc.rootfs.path", "lxc.uts.name", "lxc.mount.entry", "lxc.net.0.veth.pair"):
        assert key not in got  # differs between any two instances
    assert "vb-1" not in json.dumps(got)


def test_qemu_config_from_command_line_and_qmp():
    cfg = qemu.VmConfig(
        name="vb-abc123",
        run_dir=Path("/run/x"),
        vmlinux=Path("/k"),
        initrd=Path("/i"),
        overlay=Path("/o.qcow2"),
        accel="tcg",
        modules=["virtio"],
        tap="vb-t1",
    )
    argv = qemu.argv(cfg)
    kvm = {"enabled": False, "present": False}
    got = engine_config.qemu_config(argv, kvm, "pc-q35-7.2-machine")
    assert got["accel"] == "tcg" and got["accel_asked"] == "tcg"
    assert got["machine"] == "q35" and got["machine_type"] == "pc-q35-7.2"
    assert got["netdev"] == "tap" and got["vhost"] == "off"
    on = [a.replace("downscript=no", "downscript=no,vhost=on") for a in argv]
    assert engine_config.qemu_config(on, {"enabled": True}, None)["vhost"] == "on"
    assert engine_config.qemu_config(on, {"enabled": True}, None)["accel"] == "kvm"


def test_report_platform_table_shows_no_none_and_the_engine():
    from virtbench.report.core.run import host_section

    labels = {
        "platform_type": "container",
        "runtime": "runsc",
        "cpu_weight": None,
        "engine": {"platform": "ptrace", "directfs": "not in this release"},
    }
    data = SimpleNamespace(
        host={}, platforms=["gv"], baseline=None, cells=[], platform_labels=lambda: {"gv": labels}
    )
    html = str(host_section(data).html)
    assert "None" not in html
    from virtbench.report.sections import registered

    assert [e.fn for e in registered() if e.name == "host"] == [host_section]
    assert "engine.platform=ptrace" in html and "runtime=runsc" in html


def test_compare_engine_differences_matter():
    a = fingerprint.engines_of(
        [("gv", {"platform": {"engine": {"platform": "ptrace", "directfs": "absent"}}})]
    )
    b = fingerprint.engines_of([("gv", {"platform": {"engine": {"platform": "systrap"}}})])
    diffs = fingerprint.engine_differences(a["gv"], b["gv"], "gv")
    assert {d.key for d in diffs} == {"engine gv platform", "engine gv directfs"}
    assert all(d.matters for d in diffs)
    gate = fingerprint.Gate(diffs, [])
    assert not gate.comparable
    assert fingerprint.engine_differences(a["gv"], None, "gv") == []  # older run: unknown
    assert fingerprint.engine_differences(a["gv"], dict(a["gv"]), "gv") == []


def test_cli_compare_pairs_platforms_by_name_or_as_given():
    from virtbench import cli

    side = lambda e: {"engines": e}  # noqa: E731
    a = side({"gv": {"platform": "ptrace"}, "crun": {}})
    b = side({"gv": {"platform": "systrap"}, "new": {"platform": "systrap"}})
    assert [d.key for d in cli._engine_differences(a, b, None, None)] == ["engine gv platform"]
    got = cli._engine_differences(a, b, "gv", "new")
    assert [d.key for d in got] == ["engine gv/new platform"]
