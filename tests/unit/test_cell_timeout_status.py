"""A cell's status is "timeout" only when virtbench's time limit killed a command
(WorkloadTimeout, raised by check() for an ExecResult that timed out), never because the
error's words say "timed out": a tool's own "Connection timed out" is a failure."""

from __future__ import annotations

from tests.unit.fakes import FakePlatform
from virtbench.errors import WorkloadError
from virtbench.platforms.base import ExecResult, check
from virtbench.results import Sample
from virtbench.runner.cell import measure
from virtbench.workloads.base import RunContext


def _status(body) -> str:
    return measure(FakePlatform("target", []), RunContext(params={}), body).status


def _raises(exc: Exception):
    def body(ctx, sampler):
        raise exc

    return body


def test_a_tools_own_timed_out_message_fails_the_cell():
    ssh = ExecResult(
        ["ssh", "client"],
        255,
        "",
        "ssh: connect to host 10.0.0.2 port 22: Connection timed out",
        3.0,
    )

    def body(ctx, sampler):
        check(ssh, "remote wrk")

    assert _status(body) == "failed"
    assert (
        _status(_raises(WorkloadError("httperf: connection timed out (client-timo)"))) == "failed"
    )


def test_a_command_killed_at_its_time_limit_times_the_cell_out():
    killed = ExecResult(["sysbench", "cpu", "run"], -9, "", "", 600.0, timed_out=True)

    def body(ctx, sampler):
        check(killed, "sysbench-cpu-1t")

    out = measure(FakePlatform("target", []), RunContext(params={}), body)
    assert out.status == "timeout"
    assert "timed out after 600s" in str(out.error)


def test_a_timeout_re_raised_with_more_words_stays_a_timeout():
    killed = ExecResult(["wrk"], -9, "", "", 40.0, timed_out=True)

    def body(ctx, sampler):
        try:
            check(killed, "wrk")
        except WorkloadError as exc:  # as web.py adds what the platform found
            partial = [Sample("req_per_s", 1.0, "req/s", True)]
            raise WorkloadError(f"{exc}; guest NIC stalled", samples=partial) from exc

    out = measure(FakePlatform("target", []), RunContext(params={}), body)
    assert out.status == "timeout"
    assert out.samples[0].labels["invalid"].startswith("cell timed out: wrk: timed out after")
