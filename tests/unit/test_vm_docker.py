"""Docker inside a VM guest (container@vm, runtime docker): the guest dockerd's argv and
scripts, the docker run argv built by the host's code, ports, pid-file kills, teardown hooks
(no guest needed: the VM is a recorder of guest commands)."""

from __future__ import annotations

import re
import subprocess

import pytest

from virtbench.errors import PlatformError
from virtbench.platforms import registry
from virtbench.platforms.base import ExecResult, PlatformSpec
from virtbench.platforms.container import docker, dockerd
from virtbench.platforms.vm import guestdocker
from virtbench.platforms.vm.modules import CONTAINER_NET_MODULES, DOCKER_MODULES, GUEST_MODULES
from virtbench.platforms.vm.stacked import StackedContainer


class FakeVm:
    """A guest that records commands and answers them from `replies` (regex -> stdout)."""

    name = "vm"
    kind = "vm"
    options = {"vcpus": 1}
    facts = {"rootfs_key": "abc123"}

    def __init__(self, replies: dict[str, str] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.replies = replies or {}
        self.hooks: dict = {}

    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        self.calls.append(list(argv))
        text = " ".join(argv)
        for pattern, out in self.replies.items():
            if re.search(pattern, text):
                return ExecResult(list(argv), 0, out, "", 0.0)
        return ExecResult(list(argv), 0, "", "", 0.0)

    def spawn(self, argv, *, cpus=None, env=None):
        self.calls.append(list(argv))
        return FakeProc()

    def endpoint(self, port):
        return ("10.213.0.9", port)

    def listen_address(self):
        return "10.213.0.9"

    def on_teardown(self, name, hook):
        self.hooks.setdefault(name, hook)

    def load_modules(self, names):
        self.calls.append(["insmod", *names])

    def put_file(self, host_path, dest=None, mode=0o755):
        self.calls.append(["put_file", host_path, dest, oct(mode)])
        return dest


class FakeProc:
    stopped = False

    def poll(self):
        return None

    def stop(self, timeout=5.0):
        self.stopped = True
        return ExecResult([], 0, "", "", 0.0)


def stacked(vm, **opts) -> StackedContainer:
    spec = PlatformSpec("d@vm", "container", {"runtime": "docker", **opts})
    c = registry.create(spec, "vb-dk0001", host=vm)
    assert isinstance(c, StackedContainer)
    return c


def test_guest_daemon_argv_keeps_to_guest_paths_and_may_forward():
    argv = dockerd.daemon_argv(False, guestdocker.PATHS, storage_driver="vfs", ip_forward=True)
    joined = " ".join(argv)
    for part in (
        "--host unix:///run/vb/docker/docker.sock",
        "--data-root /var/lib/vb-docker",
        "--exec-root /run/vb/docker/exec",
        "--pidfile /run/vb/docker/dockerd.pid",
        "--exec-opt native.cgroupdriver=cgroupfs",
        "--storage-driver vfs",
        "--ip-forward=true",
        "--userland-proxy=false",
    ):
        assert part in joined
    assert "/var/lib/virtbench" not in joined and "/run/virtbench" not in joined


def test_storage_driver_is_overlay2_only_with_overlayfs():
    assert guestdocker.storage_driver("nodev\tproc\n\text4\nnodev\toverlay\n") == "overlay2"
    assert guestdocker.storage_driver("nodev\tproc\n\text4\n") == "vfs"


def test_import_script_tars_this_filesystem_without_virtbench_state_and_checks_tar():
    script = guestdocker.import_script("vb-rootfs:abc123")
    assert "tar -C / --one-file-system --numeric-owner" in script
    for excluded in ("./var/lib/vb-docker", "./var/lib/vb-containers", "./lost+found"):
        assert f"--exclude={excluded}" in script
    assert "import --change 'LABEL org.virtbench=1' - vb-rootfs:abc123" in script
    assert '[ "$(cat $rc)" -le 1 ]' in script  # tar's failure fails the import
    r = subprocess.run(["sh", "-n", "-c", script], capture_output=True)  # valid sh
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "script", [guestdocker.stop_script(), guestdocker.start_script(), guestdocker.answer_script(7)]
)
def test_guest_scripts_are_valid_sh(script):
    assert subprocess.run(["sh", "-n", "-c", script], capture_output=True).returncode == 0


def test_stop_script_removes_labelled_objects_then_stops_dockerd():
    script = guestdocker.stop_script()
    assert script.index("rm -f -v $ids") < script.index("kill -TERM")
    assert "volume rm -f" in script and f"network rm {docker.NETWORK}" in script
    assert "kill -KILL" in script


def test_facts_parse_numbers_and_words():
    facts = guestdocker.parse_facts(
        "docker_start_s=41.5\ndocker_storage_driver=overlay2\nnoise\ndocker_import_s=88.0\n"
    )
    assert facts == {
        "docker_start_s": 41.5,
        "docker_storage_driver": "overlay2",
        "docker_import_s": 88.0,
    }


def test_proxy_ports_from_pgrep_lines():
    lines = [
        "/usr/bin/docker-proxy -proto tcp -host-ip 10.0.2.15 -host-port 30001 -container-ip x",
        "/usr/sbin/other -host-port 5",
        "/usr/bin/docker-proxy -host-port",  # cut off: ignored
    ]
    assert docker.ports_of_proxies([ln.split() for ln in lines]) == [30001]


def test_docker_modules_travel_in_the_initramfs():
    assert set(CONTAINER_NET_MODULES) <= set(DOCKER_MODULES) <= set(GUEST_MODULES)
    assert {"nft_compat", "xt_MASQUERADE", "xt_nat", "nft_ct", "br_netfilter"} <= set(
        DOCKER_MODULES
    )


def test_docker_bridge_network_is_refused_inside_a_vm():
    with pytest.raises(PlatformError, match=r"allowed inside a VM: host, nat"):
        stacked(FakeVm(), network="bridge")


def test_run_argv_is_the_hosts_docker_code_with_guest_paths_and_bind():
    vm = FakeVm({r"volume inspect": ""})
    c = stacked(vm, network="nat", storage="volume", cpu_weight=256)
    eng = c.docker
    assert eng is not None and c.runtime is eng
    eng.image = docker.image_ref("abc123")
    eng.bind = "10.213.0.9"
    eng.prepare_instance(c.instance, "volume", 20000)
    inner, outer = eng.ports[c.instance]
    assert outer == inner + 20000
    argv = eng.run_command(c.instance, c._config(), f"{c.dir}/pids", detach=True)
    joined = " ".join(argv)
    assert argv[:3] == guestdocker.CLI and "run --detach --name vb-dk0001" in joined
    assert "--cgroup-parent /virtbench " in joined  # Docker's group: /virtbench/<id>
    assert f"--publish 10.213.0.9:{outer}-{outer + 7}:{inner}-{inner + 7}/tcp" in joined
    assert "--mount type=volume,source=vb-dk0001,target=/data" in joined
    assert f"--volume {c.dir}/pids:/.vb-pids:rw" in joined
    assert "--cpu-shares 256" in joined
    assert "source=" + c.dir not in joined  # no crun-style bind of a guest directory
    # every docker command went to the guest (volume create/inspect, network create)
    assert all(call[:3] == guestdocker.CLI for call in vm.calls)
    assert any("volume" in call and "create" in call for call in vm.calls)


def test_nat_endpoint_goes_through_the_vms_endpoint_for_the_published_port():
    vm = FakeVm()
    c = stacked(vm, network="nat")
    c.docker.ports[c.instance] = (10000, 30000)
    assert c.endpoint(10003) == ("10.213.0.9", 30003)
    assert sorted(c.server_ports()) == list(range(10000, 10008))
    with pytest.raises(PlatformError, match="publishes ports 10000..10007"):
        c.endpoint(10009)


def test_host_network_endpoint_is_the_vms():
    c = stacked(FakeVm(), network="host")
    assert c.endpoint(5201) == ("10.213.0.9", 5201) and c.server_ports() is None


def test_cgroup_is_dockers_id_under_virtbench():
    c = stacked(FakeVm())
    c._cgroup_leaf = "f" * 64
    assert c.guest_cgroup == "/sys/fs/cgroup/virtbench/" + "f" * 64


def test_exec_records_a_pid_and_stop_kills_inside_the_container():
    vm = FakeVm()
    c = stacked(vm)
    c.exec(["true"])
    run = vm.calls[0]
    assert run[:4] == [*guestdocker.CLI, "exec"] and "vb-dk0001" in run
    assert "echo $$ > /.vb-pids/exec-1.pid" in " ".join(run)
    assert vm.calls[1] == ["rm", "-f", f"{c.dir}/pids/exec-1.pid"]
    proc = c.spawn(["iperf3", "-s"])
    proc.stop()
    kill = vm.calls[-1]
    assert kill[:2] == ["sh", "-c"] and 'exec "$2" kill -TERM' in kill[2]
    assert kill[3:] == ["sh", f"{c.dir}/pids/exec-2.pid", "vb-dk0001"]
    assert proc._proc.stopped


def test_dockerd_start_failure_shows_its_log():
    vm = FakeVm(
        {
            r"^sh -c kill -0 7": "",  # the answer script: never answers
            r"tail -n 20": "failed to start daemon: Error initializing network controller",
            r"echo \$!": "7",
            r"cat /proc/filesystems": "nodev\toverlay\n",
        }
    )
    with pytest.raises(PlatformError) as exc:
        guestdocker.start(vm, userland_proxy=True, timeout=0.0)
    msg = str(exc.value)
    assert "dockerd in the guest of 'vm' did not answer within 0s" in msg
    assert "--storage-driver overlay2" in msg and "Error initializing network" in msg
    assert ["kill", "-KILL", "7"] in vm.calls
    assert vm.calls[0][0] == "insmod" and "nft_compat" in vm.calls[0]


def test_ensure_daemon_registers_one_teardown_hook_and_refuses_a_busy_mode_switch():
    vm = FakeVm(
        {
            r"version --format": "20.10.24",
            r"^cat /run/vb/docker/facts": "docker_nat_mode=iptables\n",
            r"ps -aq": "abc\n",
        }
    )
    d = guestdocker.ensure_daemon(vm, None)  # whatever runs: iptables
    assert d.owned and not d.userland_proxy and "docker" in vm.hooks
    with pytest.raises(PlatformError, match="daemon-wide"):
        guestdocker.ensure_daemon(vm, dockerd.PROXY)


def test_vm_teardown_runs_hooks_once_while_the_guest_runs(tmp_path, monkeypatch):
    from virtbench.platforms.vm.platform import VmPlatform

    monkeypatch.setenv("VIRTBENCH_STATE", str(tmp_path))
    vm = VmPlatform(PlatformSpec("vm", "vm", {"accel": "tcg"}), "vb-hook01")
    order: list[str] = []

    class Machine:
        def alive(self):
            return True

        def stop(self):
            order.append("qemu stopped")

    vm.machine = Machine()  # type: ignore[assignment]
    vm.on_teardown("docker", lambda: order.append("docker"))
    vm.on_teardown("docker", lambda: order.append("twice"))  # one per name
    vm.on_teardown("other", lambda: 1 / 0)  # a failing hook does not stop teardown
    vm.teardown()
    assert order == ["docker", "qemu stopped"]
    vm.teardown()  # hooks ran once
    assert order == ["docker", "qemu stopped", "qemu stopped"]


def test_seed_daemon_keeps_off_the_hosts_network_and_writes_the_guests_data_root(tmp_path):
    from virtbench.platforms.vm import dockerseed

    argv = dockerseed.seed_argv(tmp_path / "stage", tmp_path / "run")
    joined = " ".join(argv)
    assert f"--data-root {tmp_path}/stage/lower/var/lib/vb-docker" in joined
    assert f"--host unix://{tmp_path}/run/d.sock" in joined
    for part in ("--iptables=false", "--bridge none", "--ip-forward=false"):
        assert part in joined
    assert "/var/lib/virtbench/docker" not in joined  # never virtbench's host daemon's root


def test_a_tree_without_dockerd_is_built_unseeded(tmp_path):
    from virtbench.platforms.vm import dockerseed

    logs: list[str] = []
    with dockerseed.seeded_tree(tmp_path, "abc", tmp_path / "work", logs.append) as out:
        assert out == (tmp_path, False)
    assert not (tmp_path / "work").exists() and not logs


def test_put_file_stages_in_the_guest_then_one_docker_cp():
    vm = FakeVm()
    c = stacked(vm, storage="volume")
    assert c.put_file("/host/app.jar", "/data/app/app.jar", 0o644) == "/data/app/app.jar"
    assert vm.calls[0] == ["put_file", "/host/app.jar", f"{c.dir}/files/app.jar", "0o644"]
    (cp,) = vm.calls[1:]
    assert cp[:2] == ["sh", "-c"] and ' cp "$2" "$1:$3"' in cp[2]
    assert cp[3:] == ["sh", "vb-dk0001", f"{c.dir}/files/app.jar", "/data/app/app.jar"]
