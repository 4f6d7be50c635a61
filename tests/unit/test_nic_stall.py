"""A VM guest's stalled NIC: the facts read on an unreachable server, and the second probe
after a link reset (platforms/vm/nicstall.py, serving/server.py)."""

import pytest

from tests.unit.fakes import FakePlatform, FakeProcess
from virtbench.errors import WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.platforms.vm import nicstall
from virtbench.serving import readiness, server
from virtbench.workloads.base import RunContext

SERIAL = """\
[    1.2] virtio_net virtio2 eth0: renamed
[  226.184991] virtio_net virtio2 eth0: NETDEV WATCHDOG: CPU: 0: transmit queue 0 timed out 5724 ms
[  226.185770] virtio_net virtio2 eth0: TX timeout on queue: 0, sq: output.0, vq: 0x1
"""


def test_watchdog_lines_are_the_guest_kernels_last_transmit_timeouts(tmp_path):
    log = tmp_path / "serial.log"
    log.write_text(SERIAL)
    lines = nicstall.watchdog_lines(log)
    assert len(lines) == 2 and "NETDEV WATCHDOG" in lines[0] and "TX timeout" in lines[1]
    log.write_text("[ 1.0] booted\n")
    assert nicstall.watchdog_lines(log) == []
    assert nicstall.watchdog_lines(tmp_path / "missing.log") == []


class _Qmp:
    """QEMU holding a transmit ring whose guest made 238 buffers available unnoticed."""

    def __init__(self, taken=(56389, 56389)):
        self.taken = list(taken)

    def command(self, name, **args):
        if name == "x-query-virtio":
            return [{"name": "virtio-blk", "path": "/b"}, {"name": "virtio-net", "path": "/n"}]
        assert args["path"] == "/n"
        tx = args["queue"] == 1
        taken = self.taken.pop(0) if tx else 20397
        ring = {"vring-avail": 0x2000 if tx else 0x1000, "vring-used": 0x3000, "vring-num": 256}
        return {"last-avail-idx": taken, "used-idx": taken, "inuse": 0, **ring}

    def hmp(self, line):
        addr = int(line.split()[-1])
        word = {0x2002: 56627, 0x1002: 20397, 0x3000 + 4 + 8 * 256: 56389}[addr]
        return f"{addr:016x}: {word:#06x}\r\n"


def test_rings_read_qemus_view_and_guest_memory():
    rx, tx = nicstall.rings(_Qmp(taken=[56389]))
    assert (rx.queue, rx.waiting) == (0, 0)
    assert (tx.avail, tx.taken, tx.avail_event, tx.waiting) == (56627, 56389, 56389, 238)
    assert "guest avail 56627, QEMU took 56389" in tx.text()


def test_a_ring_is_stalled_only_if_qemu_takes_nothing_while_buffers_wait():
    assert nicstall.stalled_tx(_Qmp(), settle_s=0).waiting == 238
    assert nicstall.stalled_tx(_Qmp(taken=[56389, 56400]), settle_s=0) is None  # moving


def test_the_kick_script_finds_the_notify_register_of_a_virtio_pci_config(tmp_path):
    """The guest-side script, run here on a fake sysfs: capability list 0x40 -> 0x50
    (vendor 0x09, notify cfg_type 2, BAR 4, offset 0x3000, multiplier 4)."""
    import struct
    import subprocess
    import sys

    pci = tmp_path / "0000:00:03.0"
    (pci / "virtio2").mkdir(parents=True)
    cfg = bytearray(256)
    cfg[0x34] = 0x40
    cfg[0x40:0x44] = bytes([0x11, 0x50, 0x0C, 0x00])  # MSI-X, next 0x50
    cfg[0x50:0x58] = bytes([0x09, 0x00, 0x14, 0x02, 0x04, 0x00, 0, 0])
    struct.pack_into("<III", cfg, 0x58, 0x3000, 0x1000, 4)
    (pci / "config").write_bytes(bytes(cfg))
    # no I/O BAR (a modern-only device): the script takes the notify capability
    (pci / "resource").write_text("0x00000000fe000000 0x00000000fe003fff 0x0000000000140204\n")
    (pci / "resource4").write_bytes(bytes(0x4000))
    net = tmp_path / "eth0"
    net.mkdir()
    (net / "device").symlink_to(pci / "virtio2")
    script = nicstall._KICK.replace("/sys/class/net/", f"{tmp_path}/")
    r = subprocess.run([sys.executable, "-c", script, "eth0", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (pci / "resource4").read_bytes()[0x3004:0x3006] == struct.pack("<H", 1)


class _Recovering(FakePlatform):
    def __init__(self, reset):
        super().__init__("vm", [])
        self.reset = reset
        self.calls = 0

    def recover_network(self):
        self.calls += 1
        return "guest kernel: NETDEV WATCHDOG", self.reset


def _unreachable_until(monkeypatch, succeed_on):
    calls = []

    def wait_ready(host, port, proc, timeout, what, probe=None, attempt_s=1.0):
        calls.append(1)
        if len(calls) < succeed_on:
            raise WorkloadError(f"{what}: server unreachable at {host}:{port}")
        return 1

    monkeypatch.setattr(readiness, "wait_ready", wait_ready)
    return calls


def test_a_reset_nic_gets_a_second_probe(monkeypatch):
    calls = _unreachable_until(monkeypatch, succeed_on=2)
    platform, logged = _Recovering(reset=True), []
    ctx = RunContext(params={}, log=logged.append)
    args = ("10.0.0.2", 80, FakeProcess(), 1.0, "nginx", None, ctx)
    assert server._wait_or_recover(platform, *args) == 1
    assert len(calls) == 2 and platform.calls == 1
    assert "NETDEV WATCHDOG" in logged[0]


def test_without_a_reset_the_error_names_what_the_platform_found(monkeypatch):
    calls = _unreachable_until(monkeypatch, succeed_on=99)
    platform = _Recovering(reset=False)
    args = ("10.0.0.2", 80, FakeProcess(), 1.0, "nginx", None, RunContext(params={}))
    with pytest.raises(WorkloadError, match="unreachable.*platform: guest kernel: NETDEV"):
        server._wait_or_recover(platform, *args)
    assert len(calls) == 1


def test_a_platform_that_knows_nothing_keeps_the_plain_error(monkeypatch):
    _unreachable_until(monkeypatch, succeed_on=99)
    args = ("10.0.0.2", 80, FakeProcess(), 1.0, "nginx", None, RunContext(params={}))
    with pytest.raises(WorkloadError) as err:
        server._wait_or_recover(FakePlatform("native", []), *args)
    assert "platform:" not in str(err.value)


# --- a stall during a measurement (the server answered its readiness probe, then went silent)


class _Stalling(FakePlatform):
    """A VM whose transmit ring stalls during the run of the sizes in `stall_on`."""

    def __init__(self, stall_on):
        super().__init__("vm", [])
        self.stall_on, self.size, self.kicks = set(stall_on), None, 0

    def network_stall(self):
        if self.size not in self.stall_on:
            return None
        self.kicks += 1
        return "guest NIC stalled (tx: guest avail 9, QEMU took 1); kicked: queue 1"


def _wrk_max(monkeypatch, platform, fail=False):
    """wrk-max over sizes 1 and 50 with wrk and nginx faked: each size serves 1000 req/s."""
    from contextlib import contextmanager

    from virtbench.drivers import wrk
    from virtbench.serving.loadgen import ClientRun
    from virtbench.serving.server import Served
    from virtbench.workloads.web import WrkMax

    w = WrkMax()

    @contextmanager
    def nginx(platform, ctx, sizes):
        yield Served(FakeProcess(), "10.0.0.2", 80, 80)

    def wrk_run(served, size, ctx, threads, conns, secs):
        platform.size = size
        if fail:
            raise WorkloadError("wrk-max: wrk failed (killed after 38 s): ")
        lat = {"min": 1.0, "max": 9.0, "mean": 5.0, "stdev": 1.0}
        res = wrk.WrkResult(secs, int(1000 * secs), 1, {}, lat, {"99": 8.0})
        return res, ClientRun(ExecResult([], 0, "", "", secs), 0.1)

    monkeypatch.setattr(w, "nginx", nginx)
    monkeypatch.setattr(w, "wrk_run", wrk_run)
    params = {k: p.default for k, p in w.params.items()} | {"file_sizes": [1, 50]}
    logged: list[str] = []
    return w.run(platform, RunContext(params=params, log=logged.append)), logged


def test_a_wrk_run_during_which_the_guest_nic_stalled_is_flagged_invalid(monkeypatch):
    platform = _Stalling(stall_on=[50])
    samples, logged = _wrk_max(monkeypatch, platform)
    rps = {s.labels["file_size_kb"]: s for s in samples if s.metric == "requests_per_s"}
    assert "invalid" not in rps[1].labels  # asked after 1 KB too: healthy
    assert rps[50].labels["invalid"].startswith("guest NIC stalled")
    assert platform.kicks == 1 and "50KB: guest NIC stalled" in logged[0]


def test_a_wrk_that_hung_on_a_stalled_nic_fails_with_the_stall(monkeypatch):
    with pytest.raises(WorkloadError, match=r"killed after 38 s.*guest NIC stalled"):
        _wrk_max(monkeypatch, _Stalling(stall_on=[1]), fail=True)
    with pytest.raises(WorkloadError) as err:  # no stall found: the plain error
        _wrk_max(monkeypatch, _Stalling(stall_on=[]), fail=True)
    assert "stalled" not in str(err.value)


def test_an_httperf_step_during_a_stall_is_invalid(monkeypatch):
    from pathlib import Path

    from virtbench.serving.loadgen import ClientRun, ParallelRun
    from virtbench.workloads.web import HttperfSweep, SweepState

    out = (Path(__file__).parent.parent / "data" / "httperf" / "rate2000_ok.txt").read_text()
    w = HttperfSweep()
    run = ClientRun(ExecResult([], 0, out, "", 2.0), 0.1)
    monkeypatch.setattr(w.driver, "offer", lambda *a: ParallelRun([run], 0.1))
    params = {k: p.default for k, p in w.params.items()}
    for stall_on, invalid in (([50], True), ([], False)):
        st = SweepState(None, 50, RunContext(params=params), [], 0.0, 1024, _Stalling(stall_on))
        st.platform.size = 50
        step = w.driver.step(st, 0, 2000.0)
        reply = next(s for s in st.samples if s.metric == "reply_rate")
        assert (step.invalid or "").startswith("guest NIC stalled") is invalid
        assert ("invalid" in reply.labels) is invalid


def test_a_vm_kicks_a_ring_that_stalled_mid_run_and_its_containers_say_so(monkeypatch):
    from types import SimpleNamespace

    from virtbench.platforms.base import PlatformSpec
    from virtbench.platforms.vm.platform import VmPlatform
    from virtbench.platforms.vm.stacked import StackedContainer

    vm = VmPlatform(PlatformSpec("vm-virtio", "vm", {}), "vb-abc123")
    assert vm.network_stall() is None  # not provisioned: nothing to ask
    vm.machine = SimpleNamespace(qmp=_Qmp(), agent=object(), alive=lambda: True)
    kicks = []
    monkeypatch.setattr(nicstall, "kick_tx", lambda agent: (kicks.append(1) or True, "queue 1"))
    monkeypatch.setattr(nicstall, "stalled_tx", lambda qmp: nicstall.rings(qmp)[1])
    spec = PlatformSpec("crun-in-vm", "container", {"runtime": "crun", "network": "host"})
    crun = StackedContainer(spec, "vb-def456", vm)
    assert "guest_nic_kicks" not in crun.labels()
    why = crun.network_stall()  # asks its VM
    assert why.startswith("guest NIC stalled (tx: guest avail 56627") and "kicked: queue 1" in why
    assert kicks == [1] and vm.labels()["guest_nic_kicks"] == 1
    assert crun.labels()["guest_nic_kicks"] == 1  # its later cells carry the kick too
    monkeypatch.setattr(nicstall, "stalled_tx", lambda qmp: None)  # a healthy ring
    assert vm.network_stall() is None and kicks == [1]


def _probing(monkeypatch, reads, stalls):
    """An httperf-sweep's capacity probe with wrk faked: wrk reads each of `reads` in turn,
    and the guest NIC stalls during the probes whose entry in `stalls` is true."""
    from virtbench.drivers import wrk
    from virtbench.serving.loadgen import ClientRun
    from virtbench.workloads.web import HttperfSweep, SweepState

    w, reads, stalls = HttperfSweep(), iter(reads), iter(stalls)

    def wrk_run(served, size, ctx, threads, conns, secs):
        lat = {"min": 1.0, "max": 9.0, "mean": 5.0, "stdev": 1.0}
        res = wrk.WrkResult(10.0, round(next(reads) * 10), 1, {}, lat, {})  # 0.1 req/s
        return res, ClientRun(ExecResult([], 0, "", "", secs), 0.1)

    monkeypatch.setattr(w, "wrk_run", wrk_run)
    monkeypatch.setattr(w, "check_alive", lambda *a: None)
    params = {k: p.default for k, p in w.params.items()}
    platform = _Stalling(stall_on=[])
    platform.network_stall = lambda: "guest NIC stalled (tx)" if next(stalls) else None
    logged: list[str] = []
    st = SweepState(None, 4, RunContext(params=params, log=logged.append), [], 0.0, 1024, platform)
    return w, st, logged


def _probes(st):
    return [s for s in st.samples if s.metric == "capacity_probe"]


def test_a_capacity_probe_during_a_stall_is_flagged_and_run_again(monkeypatch):
    w, st, _ = _probing(monkeypatch, [746.0, 880.0], [True, False])
    assert w.capacity(st) == 880.0  # the sweep follows the probe on the kicked NIC
    probes = _probes(st)
    assert [p.value for p in probes] == [746.0, 880.0]
    assert probes[0].labels["invalid"].startswith("guest NIC stalled")
    assert "invalid" not in probes[1].labels
    w, st, _ = _probing(monkeypatch, [700.0, 860.0, 990.0], [True, True, True])
    assert w.capacity(st) == 860.0 and len(st.samples) == 4  # at most one second probe


def test_when_every_probe_stalled_the_highest_sets_the_scale(monkeypatch):
    """Run 20261127-054853-d90a: vm-virtio's 4 KB probes read 1,147 and then 133.6 req/s,
    both on a stalled NIC; the second scaled the sweep, which topped out at 134 req/s served
    in full where the server served ~1,277. A stall only makes a probe read low."""
    w, st, logged = _probing(monkeypatch, [1147.0, 133.6], [True, True])
    assert w.capacity(st) == 1147.0
    first, second = _probes(st)
    assert first.labels["invalid"].startswith("guest NIC stalled")  # each keeps its reason
    assert second.labels["invalid"].startswith("guest NIC stalled")
    assert first.labels["probe_used"] is True and "probe_used" not in second.labels
    assert "every probe stalled" in logged[-1] and "1,147 req/s" in logged[-1]


def test_a_clean_retry_sets_the_scale_even_below_the_stalled_probe(monkeypatch):
    w, st, logged = _probing(monkeypatch, [1147.0, 900.0], [True, False])
    assert w.capacity(st) == 900.0
    first, second = _probes(st)
    assert "invalid" not in second.labels and second.labels["probe_used"] is True
    assert "probe_used" not in first.labels
    assert not any("every probe stalled" in line for line in logged)


def test_a_clean_first_probe_is_the_only_one_and_sets_the_scale(monkeypatch):
    w, st, _ = _probing(monkeypatch, [880.0], [False])
    assert w.capacity(st) == 880.0
    (probe,) = _probes(st)
    assert probe.labels == {"file_size_kb": 4, "probe_used": True}


def test_probes_that_read_nothing_still_leave_nothing_to_sweep(monkeypatch):
    from virtbench.errors import VirtbenchError

    w, st, _ = _probing(monkeypatch, [0.0, 0.0], [True, True])
    assert w.capacity(st) == 0.0
    with pytest.raises(VirtbenchError, match="capacity probe measured 0 req/s"):
        w.plan(st.ctx, 0.0)
