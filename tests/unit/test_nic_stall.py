"""A VM guest's stalled NIC: the facts read on an unreachable server, and the second probe
after a link reset (platforms/vm/nicstall.py, serving/server.py)."""

import pytest

from tests.unit.fakes import FakePlatform, FakeProcess
from virtbench.errors import WorkloadError
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
    def command(self, name, **args):
        if name == "x-query-virtio":
            return [{"name": "virtio-blk", "path": "/b"}, {"name": "virtio-net", "path": "/n"}]
        assert args["path"] == "/n"
        taken = 100 if args["queue"] == 1 else 7
        return {"shadow-avail-idx": 356, "last-avail-idx": taken, "used-idx": taken, "inuse": 0}


def test_queue_status_reads_both_virtio_net_queues():
    rx, tx = nicstall.queue_status(_Qmp())
    assert rx.startswith("rx: avail 356, taken 7")
    assert tx.startswith("tx: avail 356, taken 100, used 100, in use 0")


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
