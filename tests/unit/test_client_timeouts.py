"""Review of the WorkloadTimeout change: the sockperf and JMeter clients run under
virtbench's own time limit (duration + 60 s, dry run + duration + 120 s) but their callers
never looked at `timed_out`: a killed client read as a parse failure or "jmeter failed
(exit -9)", so the cell was 'failed' where wrk, httperf and iperf3 now say 'timeout'."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

from tests.unit.fakes import FakePlatform
from virtbench.platforms.base import ExecResult
from virtbench.runner.cell import measure
from virtbench.serving.loadgen import ClientRun
from virtbench.workloads import application, network
from virtbench.workloads.base import RunContext

TARGET = FakePlatform("target", [])
KILLED = ExecResult(["client"], -9, "sockperf: == version #3.10 ==\n", "", 63.0, timed_out=True)


def test_a_sockperf_client_killed_at_its_limit_times_the_cell_out(monkeypatch):
    @contextlib.contextmanager
    def serve(*a, **k):
        yield SimpleNamespace(path="loopback", host="127.0.0.1", port=1)

    monkeypatch.setattr(network, "serve", serve)
    monkeypatch.setattr(network, "run_client", lambda *a, **k: ClientRun(KILLED, 0.1))
    w = next(c for c in vars(network).values() if getattr(c, "name", "") == "sockperf-tcp-rr")()
    ctx = RunContext(params={"duration": 3.0, "msg_size": 64, "port": 0, "client_path": "host"})
    out = measure(TARGET, ctx, lambda c, _s: w.run(TARGET, c))
    assert out.status == "timeout", out.error


def test_a_jmeter_client_killed_at_its_limit_times_the_cell_out(monkeypatch, tmp_path: Path):
    (tmp_path / application.appstack.LAUNCHER_JAR).write_text("")
    monkeypatch.setattr(application.appstack, "resource", lambda name: b"")
    monkeypatch.setattr(application, "run_client", lambda *a, **k: ClientRun(KILLED, 0.1))
    monkeypatch.setattr(application.jmeter, "argv", lambda *a, **k: ["jmeter"])
    ctx = RunContext(params={"dry_run": 1, "duration": 1, "users": 1, "request_timeout": 1})
    w = application.DayTraderJMeter()
    monkeypatch.setattr(type(w), "client_flags", staticmethod(lambda ctx: []))
    served = SimpleNamespace(host="127.0.0.1", port=1)
    out = measure(TARGET, ctx, lambda c, _s: w._client(served, c, tmp_path))
    assert out.status == "timeout", out.error
