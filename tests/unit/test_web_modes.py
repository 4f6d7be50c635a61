"""Web suite plumbing without tools: parallel httperf results and verdicts, client CPU slots,
server-closes argv, ports outside the ephemeral range, the HTTP readiness probe, fixed-rate
mode and how co-location's load=PCT finds the rate parameter."""

import socket
import threading
from pathlib import Path

import pytest

from virtbench import ports as srv_ports
from virtbench.drivers import httperf
from virtbench.errors import VirtbenchError, WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.scenarios import colocation, rates
from virtbench.serving import loadgen, readiness
from virtbench.serving.loadgen import ClientRun, ParallelRun
from virtbench.workloads.base import RunContext
from virtbench.workloads.web import HttperfSweep, SweepState
from virtbench.workloads.web_httperf import HttperfSteps

DATA = Path(__file__).parent.parent / "data"


def load(name: str) -> httperf.HttperfResult:
    return httperf.parse((DATA / "httperf" / name).read_text())


def test_server_closes_header_only_with_one_request_per_connection():
    a = httperf.argv("127.0.0.1", 80, "/f1k.bin", 100, 100, 1, 5, server_closes=True)
    assert a[-1] == "--add-header=Connection: close\\n"  # httperf turns the \\n into CRLF
    assert not any(
        "add-header" in x for x in httperf.argv("h", 80, "/", 100, 100, 5, 5, False, True)
    )
    assert not any("add-header" in x for x in httperf.argv("h", 80, "/", 100, 100, 1, 5))


def test_combine_adds_counts_and_rates():
    a, b = load("rate2000_ok.txt"), load("rate500_calls5.txt")
    c = httperf.combine([a, b])
    assert c.connections == a.connections + b.connections
    assert c.replies == a.replies + b.replies
    assert c.throughput == pytest.approx(a.throughput + b.throughput)
    assert c.conn_time_max_ms == max(a.conn_time_max_ms, b.conn_time_max_ms)
    assert c.errors_total == a.errors_total + b.errors_total
    assert c.status["2xx"] == a.status["2xx"] + b.status["2xx"]
    assert c.reply_rate_samples == 0  # per-5 s samples of separate processes do not add up
    assert httperf.combine([a]) is a


def test_combine_keeps_client_resource_errors():
    ok, starved = load("rate2000_ok.txt"), load("rate6000_fd_unavail.txt")
    c = httperf.combine([ok, starved])
    assert c.errors["fd-unavail"] == starved.errors["fd-unavail"]
    assert c.attempts == ok.attempts + starved.attempts


def _run(cpu_s: float, elapsed: float = 1.0) -> ExecResult:
    return ExecResult([], 0, "", "", elapsed, cpu_user_s=cpu_s / 2, cpu_sys_s=cpu_s / 2)


def test_client_slots_one_per_cpu_round_robin():
    ctx = RunContext(params={}, client_cpus=[0, 2])
    assert loadgen.client_slots(ctx, 0) == [[0], [2]]
    assert loadgen.client_slots(ctx, 3) == [[0], [2], [0]]
    assert loadgen.client_slots(RunContext(params={}), 0) == [None]
    assert loadgen.client_slots(RunContext(params={}), 2) == [None, None]


def test_cpu_loads_add_up_per_cpu():
    # two processes sharing CPU 0 at 50 % each: both read a full CPU; CPU 2 alone at 30 %
    loads = loadgen.cpu_loads([_run(0.5), _run(0.3), _run(0.5)], [[0], [2], [0]])
    assert loads == pytest.approx([1.0, 0.3, 1.0])


def test_parallel_verdict_judges_each_process():
    ok = load("rate2000_ok.txt")
    both = httperf.combine([ok, ok])
    par = ParallelRun([ClientRun(_run(0.4), 0.4), ClientRun(_run(0.97), 0.97)], 0.97)
    why = HttperfSteps.verdict([ok, ok], [2000, 4000], par, both, 6000)
    assert why.startswith("httperf 2/2: load generator could not send at the offered rate")
    par = ParallelRun([ClientRun(_run(0.4), 0.4), ClientRun(_run(0.4), 0.4)], 0.4)
    assert HttperfSteps.verdict([ok, ok], [2000, 2000], par, both, 4000) is None
    # the processes together did not offer the rate (each is judged against its own share)
    why = HttperfSteps.verdict([ok, ok], [4000, 4000], par, both, 8000)
    assert "httperf 1/2: load generator could not send" in why
    one = ParallelRun([ClientRun(_run(0.97), 0.97)], 0.97)
    assert HttperfSteps.verdict([ok], [2000], one, ok, 2000) is None  # a busy-polling client


def test_ports_avoid_the_ephemeral_range(tmp_path, monkeypatch):
    f = tmp_path / "range"
    f.write_text("1024\t65000\n")
    assert srv_ports.ephemeral_range(str(f)) == (1024, 65000)
    f.write_text("garbage")
    assert srv_ports.ephemeral_range(str(f)) == srv_ports.DEFAULT_EPHEMERAL
    # default range: the preferred 10000-12500 pool is untouched
    assert srv_ports._pool((32768, 60999)) == [(10000, 12500)]
    # a range covering the preferred pool: only ports above it remain
    assert srv_ports._pool((1024, 65000)) == [(65001, 65536)]
    assert srv_ports._pool((11000, 60999)) == [(10000, 11000)]
    monkeypatch.setattr(srv_ports, "ephemeral_range", lambda: (1024, 65000))
    ports = srv_ports.candidate_ports(0, tries=3)
    assert ports and all(p > 65000 for p in ports)
    assert srv_ports.candidate_ports(4242) == [4242]  # the user's choice is never second-guessed


def _http_server(reply: bytes):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve_one():
        conn, _ = srv.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(reply)
        srv.close()

    threading.Thread(target=serve_one, daemon=True).start()
    return srv.getsockname()[1]


def test_http_probe_wants_200():
    port = _http_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    readiness.http_probe("/f1k.bin")("127.0.0.1", port, 2.0)
    port = _http_server(b"HTTP/1.1 404 Not Found\r\n\r\n")
    with pytest.raises(WorkloadError, match="answered 'HTTP/1.1 404 Not Found', not 200"):
        readiness.http_probe("/f1k.bin")("127.0.0.1", port, 2.0)
    port = _http_server(b"SSH-2.0-OpenSSH\r\n")
    with pytest.raises(readiness.NotReady, match="no HTTP status line"):
        readiness.http_probe("/f1k.bin")("127.0.0.1", port, 2.0)


class _Proc:
    def poll(self):
        return None


def test_wait_ready_retries_then_names_what_failed():
    calls = []

    def flaky(host, port, timeout):
        calls.append(timeout)
        if len(calls) < 3:
            raise ConnectionRefusedError(111, "Connection refused")

    assert readiness.wait_ready("127.0.0.1", 1, _Proc(), 5, "x", flaky) == 3
    assert all(t <= 1.0 for t in calls)  # each attempt is bounded

    def never(host, port, timeout):
        raise readiness.NotReady("no HTTP status line")

    with pytest.raises(
        WorkloadError, match=r"unreachable at 127.0.0.1:1 after 0s and \d+ attempts"
    ):
        readiness.wait_ready("127.0.0.1", 1, _Proc(), 0.2, "x", never)


def test_fixed_rate_mode_runs_one_step_per_size(monkeypatch):
    w = HttperfSweep()
    seen = []

    def fake_step(st, index, rate, duration, phase, clients):
        # 500 req/s x 5 s could leave 2,500 open, but the 4 s step opens only 2,000
        assert (clients.processes, clients.timeout, clients.sockets) == (2, 5.0, 2000)
        seen.append((st.size, index, rate, duration, phase))
        return httperf_step(index, rate)

    def httperf_step(index, rate):
        from virtbench.drivers import sweep

        return sweep.StepResult(index, rate, rate * 0.99, 0, 100)

    monkeypatch.setattr(w.driver, "step", fake_step)
    monkeypatch.setattr(w, "check_alive", lambda *a: None)
    params = {k: p.default for k, p in w.params.items()} | {"rate": 500.0, "duration": 4.0}
    samples: list = []
    for size in (1, 10):
        w.fixed_one(SweepState(None, size, RunContext(params=params), samples, 0.0, 1024), 500.0)
    assert seen == [(1, 0, 500.0, 4.0, "fixed-rate"), (10, 0, 500.0, 4.0, "fixed-rate")]
    heads = [s for s in samples if s.metric == "peak_throughput"]
    assert [h.value for h in heads] == [495.0, 495.0]
    assert all(h.labels["phase"] == "fixed-rate" and "invalid" not in h.labels for h in heads)


def test_colocation_finds_the_rate_parameter():
    assert HttperfSweep.rate_param in HttperfSweep.params
    assert HttperfSweep.params[HttperfSweep.rate_param].default == 0  # 0 = sweep = solo peak

    class Env:
        workload = HttperfSweep()

    # many:N defaults each environment to 10 % of its solo peak for a workload with a rate
    assert colocation.Many(["3"])._pct(Env()) == 10.0


def test_load_with_several_file_sizes_is_a_clear_error():
    class Env:
        workload = HttperfSweep()

    params = {k: p.default for k, p in HttperfSweep.params.items()} | {"file_sizes": [1, 10]}
    with pytest.raises(VirtbenchError, match=r"several file sizes \[1, 10\].*file_sizes = \[1\]"):
        rates.apply_load(Env(), None, params, 10.0)


def test_busiest_share_from_proc_stat_deltas():
    before = {0: (100, 1000), 1: (500, 1000)}
    after = {0: (190, 1100), 1: (520, 1100)}
    assert loadgen.busiest_share(before, after) == pytest.approx(0.9)
    assert loadgen.busiest_share({}, {}) == 0.0
    assert set(loadgen.cpu_times({0})) <= {0}  # the running host's own /proc/stat parses


PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid
   0: 00000000:2A3B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0
   1: 0100007F:2A3C 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0
"""


def test_listening_socket_from_proc_net():
    assert readiness._listening(PROC_NET_TCP, 0x2A3B, "0A")
    assert not readiness._listening(PROC_NET_TCP, 0x2A3C, "0A")  # established, not listening
    assert not readiness._listening(PROC_NET_TCP, 0x2A3B, "07")


def test_listening_probe_reads_inside_the_environment():
    from virtbench.platforms.base import ExecResult as R

    class P:
        def __init__(self, out):
            self.out, self.argv = out, None

        def exec(self, argv, timeout=None):
            self.argv = argv
            return R(argv, 1, self.out, "cat: /proc/net/tcp6: No such file", 0.0)

    p = P(PROC_NET_TCP)
    readiness.listening_probe(p, 0x2A3B)("10.0.0.2", 30000, 1.0)  # tcp6 missing is fine
    assert p.argv == ["cat", "/proc/net/tcp", "/proc/net/tcp6"]
    with pytest.raises(readiness.NotReady, match="no UDP socket on port 10812"):
        readiness.listening_probe(P(PROC_NET_TCP), 0x2A3C, udp=True)("h", 1, 1.0)
