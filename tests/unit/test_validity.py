"""Issue 13 item 7: one rule for "the load generator was the limit" across every client tool
(virtbench/validity.py), checked on captured outputs of each tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench import validity
from virtbench.drivers import httperf, iperf3, sockperf, wrk

DATA = Path(__file__).parent.parent / "data"
SATURATED = "load generator CPU saturated (97% of its CPUs)"


def text(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text()


CLOSED_LOOP = {
    "wrk": lambda util: wrk.invalid_reason(wrk.parse(text("wrk", "lua_json_keepalive.txt")), util),
    "iperf3": lambda util: iperf3.invalid_reason(iperf3.parse(text("iperf3", "tcp_p2.json")), util),
    "iperf3-udp": lambda util: iperf3.invalid_reason(
        iperf3.parse(text("iperf3", "udp.json")), util
    ),
    "sockperf": lambda util: sockperf.invalid_reason(
        sockperf.parse(text("sockperf", "tcp_pingpong.txt")), util
    ),
}


@pytest.mark.parametrize("tool", sorted(CLOSED_LOOP))
def test_a_saturated_closed_loop_client_invalidates_every_tool_alike(tool):
    verdict = CLOSED_LOOP[tool]
    assert verdict(0.50) is None
    assert verdict(validity.CLIENT_SATURATED) is None  # at the threshold: still room
    assert verdict(0.97) == SATURATED


def test_the_open_loop_client_is_judged_by_the_load_it_delivered_not_its_cpu():
    ok = httperf.parse(text("httperf", "rate2000_ok.txt"))
    assert httperf.invalid_reason(ok, 2000, 0.99) is None  # busy-polls: ~100% CPU is normal
    assert "could not send" in httperf.invalid_reason(ok, 4000, 0.3)
    starved = httperf.parse(text("httperf", "rate6000_fd_unavail.txt"))
    assert "ran out of sockets" in httperf.invalid_reason(starved, 6000, 0.15)


def test_no_result_at_all_is_invalid_whatever_the_cpu():
    refused = wrk.parse(text("wrk", "lua_json_close.txt"))
    refused.requests = 0
    assert wrk.invalid_reason(refused, 0.1).startswith("no request completed")
    assert wrk.invalid_reason(refused, 0.99) == "load generator CPU saturated (99% of its CPUs)"
    res = sockperf.parse(text("sockperf", "tcp_pingpong.txt")) | {"received": 0.0}
    assert sockperf.invalid_reason(res, 0.2) == "no reply received"
    res = iperf3.parse(text("iperf3", "tcp_p2.json")) | {"received_bps": 0.0}
    assert iperf3.invalid_reason(res, 0.2) == "nothing received"


def test_replies_that_were_http_errors_are_not_throughput():
    import dataclasses

    res = wrk.parse(text("wrk", "lua_json_keepalive.txt"))
    assert wrk.invalid_reason(res, 0.2) is None
    res.errors = res.errors | {"status": res.requests // 2}  # half of them 404s
    assert "replies were HTTP errors" in wrk.invalid_reason(res, 0.2)
    ok = httperf.parse(text("httperf", "rate2000_ok.txt"))
    assert ok.status.get("4xx", 0) == 0
    from virtbench.platforms.base import ExecResult
    from virtbench.serving.loadgen import ClientRun, ParallelRun
    from virtbench.workloads.web_httperf import HttperfSteps

    one = ParallelRun([ClientRun(ExecResult([], 0, "", "", 1.0), 0.5)], 0.5)
    assert HttperfSteps.verdict([ok], [2000], one, ok, 2000) is None
    bad = dataclasses.replace(ok, status=ok.status | {"2xx": 0, "4xx": ok.replies})
    why = HttperfSteps.verdict([bad], [2000], one, bad, 2000)
    assert why == f"{ok.replies} of {ok.replies} replies were HTTP errors (status not 2xx/3xx)"
