"""A fixed-rate httperf step (load=PCT, a start-up storm) sizes its client to hold every
connection its rate can leave open (rate x timeout) and says so in its labels; a sweep step
keeps one httperf per client CPU and its labels as they were."""

from pathlib import Path

import pytest

from virtbench.drivers import httperf
from virtbench.platforms.base import ExecResult
from virtbench.serving.loadgen import ClientRun, ParallelRun
from virtbench.serving.server import Served
from virtbench.workloads import web
from virtbench.workloads.base import RunContext
from virtbench.workloads.web import HttperfSweep, SweepState

DATA = Path(__file__).parent.parent / "data" / "httperf"
NOFILE = 1_048_576  # raise_nofile() here: httperf caps itself at FD_SETSIZE anyway
# the labels of a sweep step before fixed-rate sizing existed (a regression guard)
SWEEP_STEP_LABELS = {
    "step",
    "offered_rate",
    "file_size_kb",
    "calls_per_conn",
    "client_nofile",
    "clients",
    "closes",
}


def test_size_clients_holds_rate_times_timeout():
    per = httperf.sockets_per_process(NOFILE)
    assert per == httperf.FD_SETSIZE - httperf.FD_RESERVE  # stdio and a margin stay free
    # seed 003 Fig. 14: 900 req/s with a 5 s timeout leaves up to 4,500 connections open
    c = httperf.size_clients(900, 5.0, 1, NOFILE)
    assert (c.processes, c.timeout) == (5, 5.0)
    assert c.sockets == 5 * per >= 900 * 5
    # the fig14-look storm: 794 req/s at 70 KB, 2,025 at 1 KB (one client CPU)
    assert httperf.size_clients(794, 5.0, 1, NOFILE).processes == 4
    assert httperf.size_clients(2025, 5.0, 1, NOFILE).processes == 11
    # a low rate keeps one process per client CPU, as before
    assert httperf.size_clients(150, 5.0, 1, NOFILE) == httperf.Clients(1, 5.0, per)
    assert httperf.size_clients(150, 5.0, 2, NOFILE).processes == 2
    # a lower fd limit holds fewer per process
    assert httperf.size_clients(900, 5.0, 1, 512).processes == 10


def test_size_clients_shortens_the_timeout_past_max_processes():
    per = httperf.sockets_per_process(NOFILE)
    # 4,000 req/s x 5 s needs 20 processes: 16 of them hold 4 s of it
    c = httperf.size_clients(4000, 5.0, 1, NOFILE)
    assert c.processes == httperf.MAX_PROCESSES
    assert c.timeout == 4.0 and per * httperf.MAX_PROCESSES / 4000 >= 4.0
    assert 4000 * c.timeout <= c.sockets
    # never below MIN_TIMEOUT_S: 40,000 req/s can still run out (and is flagged then)
    c = httperf.size_clients(40_000, 5.0, 1, NOFILE)
    assert (c.processes, c.timeout) == (httperf.MAX_PROCESSES, httperf.MIN_TIMEOUT_S)
    assert c.sockets < 40_000 * c.timeout
    # never longer than the timeout asked for
    assert httperf.size_clients(40_000, 0.5, 1, NOFILE).timeout == 0.5


class _Proc:
    def poll(self):
        return None


def _state(params: dict, cpus=(0,)) -> tuple[SweepState, HttperfSweep]:
    w = HttperfSweep()
    p = {k: v.default for k, v in w.params.items()} | params
    served = Served(_Proc(), "127.0.0.1", 8080, 8080)
    ctx = RunContext(params=p, client_cpus=list(cpus))
    return SweepState(served, 1, ctx, [], 0.0, NOFILE), w


def _fake_clients(monkeypatch, output: str) -> list:
    """web.run_clients replaced: record each call's argvs and slots, answer `output`."""
    calls = []
    # each process at its share of the rate: a short connect burst (the recorded 277 at
    # 2000 conn/s would be a schedule slip at a 180 conn/s share)
    text = (DATA / output).read_text().replace("burst length: 277", "burst length: 3")

    def run_clients(argvs, slots, **kw):
        calls.append((argvs, slots))
        runs = [ClientRun(ExecResult(a, 0, text, "", 3.0, False, 0.3, 0.3), 0.2) for a in argvs]
        return ParallelRun(runs, 0.2, 0.3)

    monkeypatch.setattr(web, "run_clients", run_clients)
    return calls


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _step_labels(st: SweepState) -> dict:
    (s,) = [s for s in st.samples if s.metric == "reply_rate"]
    return s.labels


def test_fixed_rate_step_sizes_its_client_and_labels_it(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({"rate": 900.0, "duration": 30.0})
    w.fixed_one(st, 900.0)
    ((argvs, slots),) = calls
    assert len(argvs) == 5 and slots == [[0]] * 5  # five processes share the one client CPU
    assert {_arg(a, "--timeout") for a in argvs} == {"5"}
    assert sum(float(_arg(a, "--rate")) for a in argvs) == pytest.approx(900.0)
    labels = _step_labels(st)
    assert labels["clients"] == 5
    assert labels["client_sockets"] == 5 * httperf.sockets_per_process(NOFILE)
    assert labels["timeout_s"] == 5.0
    assert labels["phase"] == "fixed-rate" and "invalid" not in labels
    # they never split results: the sizing differs between file sizes
    assert {"clients", "client_sockets", "timeout_s"} <= set(HttperfSweep.ignored_labels)


def test_forced_clients_stand_and_running_out_of_sockets_stays_invalid(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate6000_fd_unavail.txt")
    st, w = _state({"rate": 2025.0, "duration": 30.0, "clients": 2})
    w.fixed_one(st, 2025.0)
    ((argvs, _slots),) = calls
    assert len(argvs) == 2  # the user's count, though 11 would hold 2025 x 5 s
    labels = _step_labels(st)
    assert labels["clients"] == 2 and labels["timeout_s"] == 5.0
    assert labels["client_sockets"] == 2 * httperf.sockets_per_process(NOFILE)
    assert "load generator ran out of sockets" in labels["invalid"]


def test_sweep_steps_keep_one_httperf_per_client_cpu_and_their_labels(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({}, cpus=(0, 1))
    w.step(st, 3, 2025.0)  # a rate the fixed-rate mode would give 11 processes
    ((argvs, slots),) = calls
    assert slots == [[0], [1]]
    assert {_arg(a, "--timeout") for a in argvs} == {"5"}
    assert set(_step_labels(st)) == SWEEP_STEP_LABELS
