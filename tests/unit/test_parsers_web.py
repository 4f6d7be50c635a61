"""httperf and wrk parsers (real outputs), step health verdicts, sweep plan and stop rules."""

from pathlib import Path

import pytest

from virtbench.drivers import httperf, nginx, sweep, wrk
from virtbench.errors import VirtbenchError, WorkloadError

DATA = Path(__file__).parent.parent / "data"


def load(name: str) -> httperf.HttperfResult:
    return httperf.parse((DATA / "httperf" / name).read_text())


def test_httperf_healthy_step():
    r = load("rate2000_ok.txt")
    assert (r.connections, r.replies) == (6000, 6000)
    assert r.duration_s == pytest.approx(3.018)
    assert r.throughput == pytest.approx(6000 / 3.018)
    assert r.reply_time_ms == 13.5 and r.transfer_time_ms == 0.0
    assert r.conn_time_avg_ms == 14.8 and r.conn_time_median_ms == 9.5
    assert r.net_kb_s == pytest.approx(2586.3)
    assert r.status["2xx"] == 6000 and r.errors_total == 0
    assert r.cpu_pct == pytest.approx(35.7)
    assert r.reply_rate_samples == 0
    assert httperf.invalid_reason(r, 2000, 0.36) is None


def test_httperf_reply_rate_samples_on_long_steps():
    r = load("rate1000_11s_samples.txt")
    assert r.reply_rate_samples == 2
    assert (r.reply_rate_min, r.reply_rate_avg, r.reply_rate_max) == (998.0, 999.2, 1000.5)
    assert r.reply_rate_stddev == 1.8


def test_httperf_fd_unavail_marks_step_invalid():
    r = load("rate6000_fd_unavail.txt")
    assert r.errors["fd-unavail"] == 12379
    assert r.attempts == 18000
    reason = httperf.invalid_reason(r, 6000, 0.15)
    assert reason and "fd-unavail=12379" in reason


def test_httperf_cpu_time_alone_is_no_verdict_but_a_slipped_schedule_is():
    # httperf busy-polls, so ~100% CPU is its normal state (man httperf: "a CPU hog")
    r = load("rate2000_ok.txt")
    assert httperf.invalid_reason(r, 2000, 0.99) is None
    r.max_burst = 1800  # 0.9 s worth of connections issued at once in a 3 s step
    assert "fell behind its schedule by up to 0.90 s" in httperf.invalid_reason(r, 2000, 0.5)


def test_httperf_client_that_could_not_send():
    r = load("rate2000_ok.txt")  # it issued ~2000 conn/s; claim 4000 were offered
    assert "could not send" in httperf.invalid_reason(r, 4000, 0.3)


def test_httperf_calls_per_connection():
    r = load("rate500_calls5.txt")
    assert (r.connections, r.requests, r.replies) == (1000, 5000, 5000)
    assert r.request_rate == pytest.approx(2501.2)


def test_httperf_refused():
    r = load("refused.txt")
    assert r.replies == 0 and r.errors["connrefused"] == 100


def test_httperf_garbage_is_a_workload_error():
    with pytest.raises(WorkloadError, match="httperf"):
        httperf.parse("httperf: command not found")


def test_httperf_argv():
    a = httperf.argv("10.0.0.2", 8080, "/f1k.bin", 250.0, 500, 1, 5, hog=True)
    assert a[:2] == ["httperf", "--hog"]
    assert a[a.index("--rate") + 1] == "250.000"
    assert a[a.index("--num-conns") + 1] == "500"
    assert "--recv-buffer=16384" in a  # httperf's own default, stated


@pytest.mark.parametrize("kb", [1, 4, 10, 30, 50, 70, 100, 200])
def test_httperf_recv_buffer_holds_two_replies(kb):
    # with httperf's 16 KB default a 100 KB reply waited on the client (half the server's
    # rate at 30 % of its CPU budget, measured); never below that default
    got = httperf.recv_buffer(kb)
    assert got >= 2 * kb * 1024 + 2 * httperf.REPLY_HEADER_BYTES
    assert got >= httperf.RECV_BUFFER_DEFAULT
    a = httperf.argv("h", 80, "/", 100, 100, recv_bytes=got)
    assert f"--recv-buffer={got}" in a


def test_httperf_recv_buffer_small_replies_keep_the_default():
    assert httperf.recv_buffer(1) == httperf.RECV_BUFFER_DEFAULT
    assert httperf.recv_buffer(100) > httperf.recv_buffer(70) > httperf.RECV_BUFFER_DEFAULT


@pytest.mark.parametrize(
    "name,requests", [("lua_json_keepalive.txt", None), ("lua_json_close.txt", None)]
)
def test_wrk_lua_json(name, requests):
    r = wrk.parse((DATA / "wrk" / name).read_text())
    assert r.requests > 0 and r.duration_s > 1
    assert r.req_per_s == pytest.approx(r.requests / r.duration_s)
    assert set(r.percentiles_us) == {"50", "75", "90", "99", "99.9", "99.99"}
    assert r.percentiles_us["50"] <= r.percentiles_us["99"] <= r.latency_us["max"]


def test_wrk_without_result_line():
    with pytest.raises(WorkloadError, match="no result line"):
        wrk.parse((DATA / "wrk" / "latency_text.txt").read_text())


def test_wrk_lua_script_has_no_placeholders():
    assert "%PCTS%" not in wrk.LUA and wrk.MARKER in wrk.LUA


def test_sweep_absolute_plan_and_zero_step():
    assert sweep.Plan(100, 50, 4).rates() == [100, 150, 200, 250]
    with pytest.raises(VirtbenchError, match="rate step must be > 0"):
        sweep.Plan(100, 0, 4)


def test_sweep_capacity_plan_tenths():
    plan = sweep.capacity_plan(1000, 0.1, 0.1, 1.5)
    rates = plan.rates()
    assert rates[0] == pytest.approx(100) and rates[-1] == pytest.approx(1500)
    assert len(rates) == 15


def _step(i, rate, thr, errors=0, attempts=1000, invalid=None):
    return sweep.StepResult(i, rate, thr, errors, attempts, invalid)


def test_sweep_stops_after_two_steps_below_best():
    steps = [_step(0, 100, 100), _step(1, 200, 200), _step(2, 300, 190)]
    assert sweep.stop_reason(steps, 2, 0.1) is None
    steps.append(_step(3, 400, 195))
    assert "below its best" in sweep.stop_reason(steps, 2, 0.1)


def test_sweep_stops_on_errors():
    assert "errors" in sweep.stop_reason([_step(0, 100, 90, errors=200)], 2, 0.1)


def test_peak_ignores_invalid_steps():
    steps = [_step(0, 100, 100), _step(1, 200, 180), _step(2, 300, 250, invalid="client")]
    best = sweep.peak(steps)
    assert best.throughput == 180 and best.offered_rate == 200
    assert sweep.peak([_step(0, 1, 1, invalid="x")]) is None


def test_a_peak_before_a_collapse_is_a_lower_bound_not_a_peak():
    # measured: an idle-neighbours:3 VM served 164..658 req/s in full, then 9 of 822
    steps = [_step(i, r, r) for i, r in enumerate((164, 329, 493, 658))]
    steps.append(_step(4, 822, 9, invalid="load generator ran out of sockets"))
    why = sweep.broke_before_saturation(steps, sweep.peak(steps))
    assert why and "lower bound" in why and "9 of 822" in why
    # a saturated server still serves near its peak when httperf runs out of sockets
    steps[-1] = _step(4, 822, 610, invalid="load generator ran out of sockets")
    assert sweep.broke_before_saturation(steps, sweep.peak(steps)) is None
    # a peak that was not served in full had saturated: the fall after it is the curve
    fell = [_step(0, 500, 500), _step(1, 1000, 700), _step(2, 1500, 10, invalid="errors")]
    assert sweep.broke_before_saturation(fell, sweep.peak(fell)) is None
    # the last step of a sweep that ended in full (max_fraction reached) is the peak
    assert sweep.broke_before_saturation(steps[:4], steps[3]) is None


@pytest.mark.parametrize("bad", [[0], [1, -4], [10**9], ["1"], [], [True]])
def test_bad_file_sizes(bad):
    with pytest.raises(VirtbenchError, match="file_size|file sizes"):
        nginx.validate_sizes(bad)


def test_nginx_conf_keeps_paths_in_root():
    text = nginx.conf("/w/vb-nginx", 18080, 1, nginx.temp_dirs("--without-http_uwsgi_module"))
    assert "daemon off;" in text and "listen 18080" in text
    assert "uwsgi_temp_path" not in text and "client_body_temp_path /w/vb-nginx/tmp/body" in text
    assert "pid /w/vb-nginx/nginx.pid" in text


def test_workload_error_carries_partial_samples():
    from virtbench.workloads.base import Sample

    s = Sample("reply_rate", 1.0, "req/s", True)
    exc = WorkloadError("server died", samples=[s])
    assert exc.samples == [s] and str(exc) == "server died"
    assert WorkloadError("plain").samples == []


def test_httperf_a_few_fd_errors_within_tolerance_stay_valid():
    r = load("rate2000_ok.txt")
    r.errors["fd-unavail"] = 30  # 0.5% of 6030 attempts
    assert httperf.invalid_reason(r, 2000, 0.3) is None
    r.errors["fd-unavail"] = 300  # ~5%
    assert "ran out of sockets" in httperf.invalid_reason(r, 2000, 0.3)


def test_the_headline_flags_a_lower_bound_peak_instead_of_reporting_it():
    from virtbench.workloads.web import HttperfSweep

    steps = [_step(i, r, r) for i, r in enumerate((164, 329, 493, 658))]
    steps.append(_step(4, 822, 9, invalid="load generator ran out of sockets"))
    out = {s.metric: s for s in HttperfSweep().headline(steps, 1, "errors")}
    assert out["peak_throughput"].value == 658
    assert "lower bound" in out["peak_throughput"].labels["invalid"]
    whole = HttperfSweep().headline(steps[:4], 1, "max rate")
    assert "invalid" not in {s.metric: s for s in whole}["peak_throughput"].labels


def test_httperf_server_timeouts_do_not_make_the_client_look_slow():
    # a 2 s step at 2000 conn/s whose last 300 connections the server never answered: they
    # time out after --timeout=5, which holds the test open (test-duration 7 s), while
    # httperf's connection times count only connections that completed a call (max 0.9 s)
    text = (DATA / "httperf" / "rate2000_ok.txt").read_text()
    text = text.replace("--num-conns=6000", "--num-conns=4000")
    text = text.replace(
        "connections 6000 requests 6000 replies 6000 test-duration 3.018",
        "connections 4000 requests 4000 replies 3700 test-duration 7.012",
    )
    text = text.replace("max 161.4", "max 900.0")
    text = text.replace("total 0 client-timo 0", "total 300 client-timo 300")
    r = httperf.parse(text)
    assert r.timeout_s == 5 and r.errors["client-timo"] == 300
    assert r.send_rate() == pytest.approx(4000 / 2.012)
    assert httperf.invalid_reason(r, 2000, 0.5) is None
    # without timeouts the connection times still bound the tail, as before
    assert load("rate2000_ok.txt").send_rate() == pytest.approx(6000 / (3.018 - 0.1614))
