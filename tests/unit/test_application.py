"""The application suite: JMeter's .jtl parser (a real captured file), the dry-run / measured
period / interval arithmetic, the validity verdicts and the samples of one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.drivers import jmeter
from virtbench.errors import WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.serving.loadgen import ClientRun
from virtbench.workloads.application import DayTraderJMeter
from virtbench.workloads.base import RunContext

DATA = Path(__file__).parent.parent / "data" / "jmeter"


def row(start_s: float, elapsed_ms: int, ok: bool = True, code: str = "200") -> jmeter.Row:
    return jmeter.Row(int(1_000_000 + start_s * 1000), elapsed_ms, ok, code)


# --- the captured .jtl --------------------------------------------------------------------


def test_parse_real_jtl():
    """A .jtl written by Debian's JMeter 2.13 through drivers/jmeter.argv (header first)."""
    text = (DATA / "daytrader-native.jtl").read_text()
    rows = jmeter.parse(text)
    assert len(rows) == text.count("\n") - 1
    assert all(r.code == "200" and r.success for r in rows)
    assert all(r.elapsed_ms >= r.latency_ms >= 0 for r in rows)
    starts = [r.start_ms for r in rows]
    assert max(starts) - min(starts) > 5_000  # several seconds of load
    assert all(r.nbytes > 100 for r in rows)  # HTML pages


def test_parse_ignores_text_before_header_and_needs_one():
    text = (DATA / "daytrader-native.jtl").read_text()
    assert len(jmeter.parse("JMeter said something\n" + text)) == len(jmeter.parse(text))
    with pytest.raises(WorkloadError, match="header"):
        jmeter.parse("Error in NonGUIDriver java.lang.Whatever\n")


def test_parse_failed_request_and_bad_line():
    head = "timeStamp,elapsed,label,responseCode,success,bytes,Latency,Connect\n"
    rows = jmeter.parse(
        head + "1700000000000,5,scenario,200,true,900,4,1\n"
        "1700000000003,10001,scenario,Non HTTP response code: java.net.SocketTimeoutException,"
        "false,0,0,0\n"
    )
    assert [r.success for r in rows] == [True, False]
    assert rows[1].code.startswith("Non HTTP")
    with pytest.raises(WorkloadError, match="unreadable"):
        jmeter.parse(head + "1700000000000,five,scenario,200,true,900,4,1\n")


# --- interval arithmetic -------------------------------------------------------------------


def test_bounds():
    assert jmeter.interval_bounds(10, 30, 6) == [0, 10, 16, 22, 28, 34, 40]
    # a last partial interval is dropped: every interval is equally long
    assert jmeter.interval_bounds(180, 20, 6) == [0, 180, 186, 192, 198]
    assert jmeter.interval_bounds(0, 12, 6) == [0, 0, 6, 12]
    with pytest.raises(WorkloadError):
        jmeter.interval_bounds(10, 5, 6)


def test_periods_assign_requests_by_completion():
    # t=0 is the first request's start; a request counts where it completed
    rows = [
        row(0.0, 100),  # ends 0.1: dry run
        row(1.95, 100),  # ends 2.05: first interval
        row(2.5, 2000),  # ends 4.5: second interval
        row(3.0, 50, ok=False, code="500"),  # ends 3.05: first interval, an error
        row(5.9, 200),  # ends 6.1: after the measured period ("late")
    ]
    per = jmeter.periods(rows, dry_s=2, measured_s=4, interval_s=2)
    assert per.dry.completed == 1
    assert [s.completed for s in per.intervals] == [2, 1]
    assert per.intervals[0].errors == 1 and per.intervals[0].codes == {"500": 1}
    assert per.late == 1
    m = per.measured
    assert (m.t0, m.t1, m.completed, m.errors) == (2, 6, 3, 1)
    assert m.throughput == pytest.approx(2 / 4)  # successful requests per second
    assert m.error_pct == pytest.approx(100 / 3)
    assert per.intervals[1].elapsed_ms == [2000]


def test_percentiles_nearest_rank():
    values = sorted(range(1, 101))
    assert jmeter.percentile(values, 50) == 50
    assert jmeter.percentile(values, 90) == 90
    assert jmeter.percentile(values, 99) == 99
    assert jmeter.percentile([7], 99) == 7
    assert jmeter.percentile([1, 2, 3, 4], 50) == 2


def test_invalid_reasons():
    s = jmeter.Stats(0, 10, completed=100, errors=0, elapsed_ms=[1] * 100)
    assert jmeter.invalid_reason(s, 0.5, 1.0) is None
    assert "saturated" in jmeter.invalid_reason(s, 0.95, 1.0)
    s.errors = 2
    assert "2 of 100 requests failed" in jmeter.invalid_reason(s, 0.5, 1.0)
    assert jmeter.invalid_reason(s, 0.5, 5.0) is None
    assert "no request" in jmeter.invalid_reason(jmeter.Stats(0, 10), 0.5, 1.0)


def test_check_run_catches_jmeter_errors_despite_exit_0():
    with pytest.raises(WorkloadError, match="ForbiddenClass"):
        jmeter.check_run(0, "", "Error in NonGUIDriver ForbiddenClassException: x")
    with pytest.raises(WorkloadError):
        jmeter.check_run(0, "", "no results at all")
    jmeter.check_run(0, "timeStamp,elapsed\n1,2\n", "summary = 1")


def test_argv_passes_properties_and_wraps_in_sh():
    argv = jmeter.argv("/tmp/l.jar", "/tmp/p.jmx", "[::1]", 8080, 16, 40, ["-Xmx64m"], 5000)
    assert argv[:2] == ["sh", "-c"]
    assert "-jar" in argv and "/tmp/l.jar" in argv and "/tmp/p.jmx" in argv
    assert "-Jvb.host=::1" in argv and "-Jvb.users=16" in argv and "-Jvb.duration=40" in argv
    assert "-Jjmeter.save.saveservice.output_format=csv" in argv
    assert argv.index("-Xmx64m") < argv.index("-jar")


# --- the samples of one run ----------------------------------------------------------------


def _ctx(**params) -> RunContext:
    p = {k: v.default for k, v in DayTraderJMeter.params.items()} | params
    return RunContext(params=p)


def _client(util: float) -> ClientRun:
    return ClientRun(ExecResult([], 0, "", "", 40.0), util)


def test_results_from_real_jtl():
    rows = jmeter.parse((DATA / "daytrader-native.jtl").read_text())
    w = DayTraderJMeter()
    ctx = _ctx(dry_run=2, duration=6, interval=2)
    out = w.results(rows, _client(0.4), {"users": 8}, ctx)
    by = {}
    for s in out:
        by.setdefault(s.metric, []).append(s)
    (tp,) = by["throughput"]
    assert tp.value > 0 and "invalid" not in tp.labels
    assert [s.labels["interval"] for s in by["interval_throughput"]] == [0, 1, 2]
    # the measured period's throughput is the mean of its equal intervals
    mean = sum(s.value for s in by["interval_throughput"]) / 3
    assert tp.value == pytest.approx(mean)
    p50, p90, p99 = (by[f"response_time_p{q}_ms"][0].value for q in (50, 90, 99))
    assert 0 < p50 <= p90 <= p99
    assert by["client_cpu_pct"][0].role == "client"
    assert by["dry_run_throughput"][0].value > 0


def test_saturated_client_invalidates_every_figure():
    rows = jmeter.parse((DATA / "daytrader-native.jtl").read_text())
    out = DayTraderJMeter().results(
        rows, _client(0.97), {}, _ctx(dry_run=2, duration=6, interval=2)
    )
    assert out and all("saturated" in s.labels.get("invalid", "") for s in out)


def test_interval_with_errors_is_invalid_alone():
    rows = [row(t / 10, 10) for t in range(0, 80)]  # 10 requests per second, 8 s
    rows += [row(5.0, 10, ok=False, code="500")] * 3  # errors in the third interval
    ctx = _ctx(dry_run=2, duration=6, interval=2, max_error_pct=5)
    out = DayTraderJMeter().results(rows, _client(0.3), {}, ctx)
    intervals = [s for s in out if s.metric == "interval_throughput"]
    # 3 of 23 failed in the second interval (13 %), 3 of 63 in the period (4.8 %)
    assert ["invalid" in s.labels for s in intervals] == [False, True, False]
    (tp,) = [s for s in out if s.metric == "throughput"]
    assert "invalid" not in tp.labels
    # at the default 1 %, the measured period is invalid, and with it every interval
    out = DayTraderJMeter().results(rows, _client(0.3), {}, _ctx(dry_run=2, duration=6, interval=2))
    assert all("failed" in s.labels["invalid"] for s in out)
