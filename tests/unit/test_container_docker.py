"""docker: OCI config -> `docker run` argv, published port block, dockerd argv and settings,
docker_nat validation."""

import os
import random

import pytest

from virtbench import cleanup
from virtbench.platforms.container import docker, dockerd, options, runtimes, spec
from virtbench.platforms.options import OptionError


def _config(**kw):
    return spec.build(
        spec.ContainerSpec(
            args=["sleep", "infinity"],
            rootfs="/unused",
            hostname="vb-1",
            cgroups_path="/virtbench/vb-1",
            **kw,
        )
    )


def _flags(network="host", volume=None, ports=None, **kw):
    return docker.docker_run_flags(
        _config(**kw),
        network=network,
        image="vb-rootfs:abc",
        pids_dir="/b/pids",
        volume=volume,
        ports=ports,
    )


def test_run_flags_carry_limits_and_end_with_image_and_command():
    res = spec.Resources(cpu_weight=256, cpu_quota_us=50000, cpuset_cpus=[1], pids_max=100)
    flags = _flags(resources=res, nofile=20000)
    joined = " ".join(flags)
    for part in (
        "--label org.virtbench=1",
        "--cgroup-parent /virtbench/vb-1",  # the vb- group: accounting and cleanup find it
        "--network host",
        "--cpu-shares 256",
        "--cpu-quota 50000",
        "--cpuset-cpus 1",
        "--pids-limit 100",
        "--ulimit nofile=20000:20000",
        "--volume /b/pids:/.vb-pids:rw",
    ):
        assert part in joined
    assert flags[-3:] == ["vb-rootfs:abc", "sleep", "infinity"]
    assert "ns:" not in joined and joined.count("--network") == 1  # podman's netns flag dropped
    assert "--publish" not in flags and "--mount" not in flags


def test_nat_publishes_a_block_on_loopback_tcp_and_udp_and_volume_mounts_data():
    flags = _flags(network="nat", volume="vb-1", ports=(10000, 30000))
    joined = " ".join(flags)
    assert "--network vb-docker" in joined
    assert "--publish 127.0.0.1:30000-30007:10000-10007/tcp" in joined
    assert "--publish 127.0.0.1:30000-30007:10000-10007/udp" in joined
    assert "--mount type=volume,source=vb-1,target=/data" in joined


def test_bridge_uses_the_network_without_publishing():
    flags = _flags(network="bridge")
    assert "--network" in flags and flags[flags.index("--network") + 1] == docker.NETWORK
    assert "--publish" not in flags


def test_endpoint_maps_only_the_published_block():
    eng = docker.Docker("nat")
    eng.ports["vb-1"] = (10000, 30000)
    assert eng.endpoint("vb-1", 10003) == ("127.0.0.1", 30003)
    with pytest.raises(Exception, match="publishes ports 10000..10007"):
        eng.endpoint("vb-1", 10008)
    assert sorted(eng.server_ports("vb-1")) == list(range(10000, 10008))
    assert docker.Docker("host").endpoint("vb-1", 5000) is None  # the platform's 127.0.0.1
    assert eng.server_ports("vb-2") is None


def test_pick_block_avoids_taken_host_ports(monkeypatch):
    taken = set(range(30000, 31000))
    monkeypatch.setattr(docker, "port_free_on_host", lambda p: p not in taken)
    inner, host = docker.pick_block(20000, random.Random(1))
    assert host == inner + 20000
    assert not taken & set(range(host, host + docker.PORT_BLOCK))
    monkeypatch.setattr(docker, "port_free_on_host", lambda p: False)
    with pytest.raises(Exception, match="no block of 8 free host ports"):
        docker.pick_block(20000)


def test_daemon_argv_keeps_to_virtbench_roots_and_cgroupfs():
    argv = dockerd.daemon_argv(userland_proxy=False)
    joined = " ".join(argv)
    for part in (
        f"--host unix://{dockerd.SOCKET}",
        "--data-root /var/lib/virtbench/docker",
        "--exec-opt native.cgroupdriver=cgroupfs",
        "--storage-driver overlay2",
        "--bridge none",
        "--ip-forward=false",
        "--userland-proxy=false",
    ):
        assert part in joined
    assert "--userland-proxy=true" in dockerd.daemon_argv(userland_proxy=True)


@pytest.mark.parametrize(
    "cmdline, daemon_json, expected",
    [
        ("dockerd", "", True),  # Docker's default
        ("dockerd --userland-proxy=false", "", False),
        ("dockerd", '{"userland-proxy": false}', False),
        ("dockerd --userland-proxy=true", '{"userland-proxy": false}', True),  # flag wins
        ("dockerd", "not json", True),
    ],
)
def test_user_daemon_userland_proxy_setting(cmdline, daemon_json, expected):
    assert dockerd.user_userland_proxy(cmdline, daemon_json) is expected


def test_docker_nat_option_validation():
    ok = options.ContainerOptions.parse(
        {"runtime": "docker", "network": "nat", "docker_nat": "iptables"}
    )
    assert ok.docker_nat == "iptables"
    assert options.ContainerOptions.parse({"runtime": "docker"}).docker_nat is None
    with pytest.raises(OptionError, match="allowed: userland-proxy, iptables"):
        options.ContainerOptions.parse({"runtime": "docker", "network": "nat", "docker_nat": "x"})
    with pytest.raises(OptionError, match='runtime = "docker" with network = "nat"'):
        options.ContainerOptions.parse(
            {"runtime": "crun", "network": "nat", "docker_nat": "iptables"}
        )
    with pytest.raises(OptionError, match="docker_nat"):
        options.ContainerOptions.parse({"runtime": "docker", "docker_nat": "iptables"})


def test_docker_is_a_runtime_choice_with_its_nat_mode():
    assert "docker" in options.SCHEMA["runtime"][1]
    eng = runtimes.get("docker", "nat", "iptables")
    assert isinstance(eng, docker.Docker) and eng.nat == "iptables"
    assert eng.own_rootfs and eng.own_network and eng.pid_files_in_container
    assert runtimes.get("docker", "nat").nat == dockerd.PROXY  # Docker's default


def test_missing_dockerd_names_the_package(monkeypatch):
    from virtbench import tools
    from virtbench.errors import MissingToolError

    monkeypatch.setattr(tools, "which", lambda name: None)
    with pytest.raises(MissingToolError, match="docker.io"):
        dockerd.ensure()


def test_dockerd_that_fails_to_start_shows_its_log(monkeypatch, tmp_path):
    from virtbench import tools
    from virtbench.errors import PlatformError

    fake = tmp_path / "dockerd"
    fake.write_text("#!/bin/sh\necho 'failed to start daemon: boom' >&2\nexit 1\n")
    fake.chmod(0o755)
    real = tools.which
    monkeypatch.setattr(tools, "which", lambda n: str(fake) if n == "dockerd" else real(n))
    for attr, path in (
        ("RUN_DIR", tmp_path / "run"),
        ("DATA_ROOT", tmp_path / "data"),
        ("LOG_FILE", tmp_path / "run/dockerd.log"),
        ("MODE_FILE", tmp_path / "run/mode"),
        ("SOCKET", tmp_path / "run/docker.sock"),
        ("CHAINS_MARK", tmp_path / "run/iptables-chains"),
        ("PID_FILE", tmp_path / "run/dockerd.pid"),
        ("EXEC_ROOT", tmp_path / "run/exec"),
    ):
        monkeypatch.setattr(dockerd, attr, path)
    monkeypatch.setattr(dockerd, "_user_dockerd", lambda: None)
    monkeypatch.setattr(dockerd, "docker_chains", lambda: {"nat": NAT_S})  # a daemon's, before
    with pytest.raises(PlatformError, match=r"(?s)dockerd exited 1.*failed to start daemon: boom"):
        dockerd._start(True)
    assert not dockerd.CHAINS_MARK.exists()  # the chains were there before ours: not ours
    monkeypatch.setattr(dockerd, "docker_chains", dict)  # none: what dockerd makes is ours
    marks = []
    monkeypatch.setattr(dockerd, "leftovers", lambda: marks.append(dockerd.CHAINS_MARK.exists()))
    with pytest.raises(PlatformError):
        dockerd._start(True)
    # the mark was made, and the failed daemon's leftovers (chains, mounts) were cleaned
    assert marks == [True] and not dockerd.MODE_FILE.exists()


# `iptables -S` of the filter and nat tables on a host a virtbench dockerd had run on, with a
# rule of someone else's (a comment, quoted) and one of Docker's isolation rules
FILTER_S = """-P INPUT ACCEPT
-P FORWARD ACCEPT
-P OUTPUT ACCEPT
-N DOCKER
-N DOCKER-ISOLATION-STAGE-1
-N DOCKER-ISOLATION-STAGE-2
-N DOCKER-USER
-A FORWARD -j DOCKER-USER
-A FORWARD -j DOCKER-ISOLATION-STAGE-1
-A FORWARD -i vb-br0 -m comment --comment "vb bridge" -j ACCEPT
-A DOCKER-ISOLATION-STAGE-1 -i br-1 ! -o br-1 -j DOCKER-ISOLATION-STAGE-2
-A DOCKER-ISOLATION-STAGE-1 -j RETURN
-A DOCKER-ISOLATION-STAGE-2 -j RETURN
-A DOCKER-USER -j RETURN
"""
NAT_S = """-P PREROUTING ACCEPT
-N DOCKER
-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
-A OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER
-A POSTROUTING -s 10.99.0.0/24 -j MASQUERADE
"""


def test_chain_removal_takes_out_only_dockers_chains_and_the_jumps_into_them():
    cmds = [" ".join(a[3:]) for a in dockerd.chain_removal("filter", FILTER_S)]
    assert cmds[:2] == ["-D FORWARD -j DOCKER-USER", "-D FORWARD -j DOCKER-ISOLATION-STAGE-1"]
    assert not any("vb-br0" in c for c in cmds)  # not a jump into Docker's chains: kept
    chains = dockerd.CHAINS["filter"]
    assert cmds[2:] == [f"-F {c}" for c in chains] + [f"-X {c}" for c in chains]  # flush first
    nat = [" ".join(a[3:]) for a in dockerd.chain_removal("nat", NAT_S)]
    assert nat == [
        "-D PREROUTING -m addrtype --dst-type LOCAL -j DOCKER",
        "-D OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER",
        "-F DOCKER",
        "-X DOCKER",
    ]
    assert dockerd.chain_removal("nat", "-P PREROUTING ACCEPT\n") == []


@pytest.fixture
def stopped(monkeypatch, tmp_path):
    """virtbench's dockerd has exited, leaving a mount and (per the test) Docker's chains;
    every iptables command is recorded, none run."""
    mark = tmp_path / "iptables-chains"
    monkeypatch.setattr(dockerd, "CHAINS_MARK", mark)
    monkeypatch.setattr(dockerd, "own_pid", lambda: None)
    monkeypatch.setattr(dockerd, "_user_dockerd", lambda: None)
    mounts = [str(dockerd.EXEC_ROOT / "netns" / "default")]
    monkeypatch.setattr(dockerd.storage, "mounts_under", lambda path: list(mounts))
    monkeypatch.setattr(dockerd.storage, "umount", mounts.remove)
    monkeypatch.setattr(dockerd, "docker_chains", lambda: {"filter": FILTER_S, "nat": NAT_S})
    ran: list[list[str]] = []
    monkeypatch.setattr(dockerd.subprocess, "run", lambda argv, **kw: ran.append(argv))
    return mark, mounts, ran


def test_leftovers_of_our_dockerd_are_removed(stopped):
    mark, mounts, ran = stopped
    mark.write_text("ours\n")
    removed = dockerd.leftovers()
    assert mounts == [] and len(removed) == 3  # the mount, two tables' chains
    assert ["iptables", "-t", "nat", "-X", "DOCKER"] in ran and not mark.exists()


def test_chains_we_did_not_make_or_a_user_dockerd_uses_are_kept(stopped, monkeypatch):
    mark, mounts, ran = stopped
    assert dockerd.leftovers() == [f"mount {dockerd.EXEC_ROOT}/netns/default (left by "
                                   "virtbench's dockerd)"]  # fmt: skip
    assert ran == []  # no mark: the chains were there before our daemon started
    mark.write_text("ours\n")
    monkeypatch.setattr(dockerd, "_user_dockerd", lambda: "dockerd -H fd://")
    assert dockerd.leftovers() == [] and ran == [] and mark.exists()  # a user's daemon runs
    monkeypatch.setattr(dockerd, "_user_dockerd", lambda: None)
    monkeypatch.setattr(dockerd, "own_pid", lambda: 4242)
    assert dockerd.leftovers() == [] and ran == []  # ours still runs: nothing is a leftover


def test_a_zombie_dockerd_is_no_users_daemon(monkeypatch):
    """Ours, stopped after the run that started it was killed, is a zombie `dockerd` (no
    command line) until PID 1 reaps it: not a user's daemon whose chains must be kept."""
    me = os.getpid()
    monkeypatch.setattr(cleanup, "command_of", lambda pid: "dockerd" if pid == me else None)
    monkeypatch.setattr(cleanup, "process_state", lambda pid: "Z")
    assert dockerd._user_dockerd() is None
    monkeypatch.setattr(cleanup, "process_state", lambda pid: "S")
    assert dockerd._user_dockerd() == "dockerd"
    monkeypatch.setattr(
        cleanup, "command_of", lambda pid: f"dockerd --host unix://{dockerd.SOCKET}"
    )
    assert dockerd._user_dockerd() is None  # ours, running
