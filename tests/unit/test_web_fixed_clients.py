"""A fixed-rate httperf step (load=PCT, a start-up storm) sizes its client to hold every
connection its rate can leave open (rate x timeout) and says so in its labels; a sweep step
keeps one httperf per client CPU and its labels as they were."""

from pathlib import Path

import pytest

from virtbench.drivers import httperf
from virtbench.platforms.base import ExecResult
from virtbench.serving.loadgen import ClientRun, ParallelRun
from virtbench.serving.server import Served
from virtbench.workloads import web_httperf
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
    "client_recv_buffer",
    "clients",
    "closes",
}


def test_size_clients_holds_rate_times_timeout(monkeypatch):
    monkeypatch.setattr(httperf, "MAX_PER_CPU", 4)  # the sizing rule at a cap of 4
    per = httperf.sockets_per_process(NOFILE)
    assert per == httperf.FD_SETSIZE - httperf.FD_RESERVE  # stdio and a margin stay free
    # seed 003 Fig. 14: 900 req/s with a 5 s timeout leaves up to 4,500 connections open;
    # two client CPUs take the 5 processes that hold them (3 on one, 2 on the other)
    c = httperf.size_clients(900, 5.0, 2, NOFILE, cpus=2)
    assert (c.processes, c.timeout, c.per_cpu) == (5, 5.0, 3)
    assert c.sockets == 5 * per >= 900 * 5
    # the fig14-look storm at 70 KB: 794 req/s fits 4 processes on one client CPU
    assert httperf.size_clients(794, 5.0, 1, NOFILE).processes == 4
    # a low rate keeps one process per client CPU, as before
    assert httperf.size_clients(150, 5.0, 1, NOFILE) == httperf.Clients(1, 5.0, per)
    assert httperf.size_clients(150, 5.0, 2, NOFILE, cpus=2).processes == 2
    # a lower fd limit holds fewer per process (two CPUs: 8 at most, 10 would hold 5 s)
    c = httperf.size_clients(900, 5.0, 2, 512, cpus=2)
    assert c.processes == 8 and c.timeout < 5.0


def test_size_clients_puts_at_most_max_per_cpu_busy_pollers_on_a_client_cpu(monkeypatch):
    """httperf busy-polls: k processes on one CPU each wait ~(k-1) scheduler slices for it,
    which adds milliseconds to every reply time; past MAX_PER_CPU the timeout shrinks."""
    monkeypatch.setattr(httperf, "MAX_PER_CPU", 4)  # the sizing rule at a cap of 4
    per = httperf.sockets_per_process(NOFILE)
    # 900 req/s x 5 s on one client CPU needs 5: 4 of them hold 4.4 s of it
    c = httperf.size_clients(900, 5.0, 1, NOFILE, cpus=1)
    assert (c.processes, c.timeout, c.per_cpu) == (4, 4.4, 4)
    assert 900 * c.timeout <= c.sockets
    # the fig14-look storm at 1 KB, 2,025 req/s: was 11 processes on one CPU
    c = httperf.size_clients(2025, 5.0, 1, NOFILE, cpus=1)
    assert (c.processes, c.timeout) == (4, 1.9) and 2025 * c.timeout <= c.sockets
    assert c.labels()["clients_per_cpu"] == 4
    # 4,000 req/s x 5 s needs 20 processes: on four CPUs, 16 of them hold 4 s of it
    c = httperf.size_clients(4000, 5.0, 4, NOFILE, cpus=4)
    assert (c.processes, c.timeout, c.per_cpu) == (16, 4.0, 4)
    assert per * 16 / 4000 >= 4.0
    # never below MIN_TIMEOUT_S: past it the processes and timeout stay, and a step that
    # runs out of sockets is flagged (by invalid_reason)
    c = httperf.size_clients(40_000, 5.0, 1, NOFILE, cpus=1)
    assert (c.processes, c.timeout) == (httperf.MAX_PER_CPU, httperf.MIN_TIMEOUT_S)
    assert c.sockets < 40_000 * c.timeout
    # MAX_PROCESSES still bounds many client CPUs
    assert httperf.size_clients(40_000, 5.0, 8, NOFILE, cpus=8).processes == 16
    # never longer than the timeout asked for
    assert httperf.size_clients(40_000, 0.5, 1, NOFILE).timeout == 0.5


def test_size_clients_holds_no_more_connections_than_the_step_opens(monkeypatch):
    """Several calls per connection, or a short step, open fewer connections than
    rate x timeout: 10,000 req/s, 100 calls each, 10 s open 1,000 in all."""
    monkeypatch.setattr(httperf, "MAX_PER_CPU", 4)  # the sizing rule at a cap of 4
    c = httperf.size_clients(10_000, 5.0, 1, 1 << 20, calls=100, duration=10.0)
    assert (c.processes, c.timeout) == (1, 5.0)
    # a 1 s step at 3,000 req/s opens 3,000 connections: 3 processes, the full timeout
    c = httperf.size_clients(3000, 5.0, 1, NOFILE, duration=1.0)
    assert (c.processes, c.timeout) == (3, 5.0)
    # without calls/duration, rate x timeout (one call in flight per connection) decides
    assert httperf.size_clients(10_000, 5.0, 1, NOFILE).timeout == 1.0


def test_size_clients_keeps_within_a_limit():
    """A client host's SSH sessions (serving/remote.MAX_SESSIONS) cap the processes."""
    c = httperf.size_clients(4000, 5.0, 16, NOFILE, cpus=16, limit=8)
    assert (c.processes, c.timeout, c.per_cpu) == (8, 2.0, 1)
    assert httperf.size_clients(150, 5.0, 16, NOFILE, cpus=16, limit=8).processes == 8


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
    """web_httperf.run_clients replaced: record each call's argvs and slots, answer `output`."""
    calls = []
    # each process at its share of the rate: a short connect burst (the recorded 277 at
    # 2000 conn/s would be a schedule slip at a 180 conn/s share)
    text = (DATA / output).read_text().replace("burst length: 277", "burst length: 3")

    def run_clients(argvs, slots, **kw):
        calls.append((argvs, slots))
        runs = [ClientRun(ExecResult(a, 0, text, "", 3.0, False, 0.3, 0.3), 0.2) for a in argvs]
        return ParallelRun(runs, 0.2, 0.3)

    monkeypatch.setattr(web_httperf, "run_clients", run_clients)
    return calls


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _step_labels(st: SweepState) -> dict:
    (s,) = [s for s in st.samples if s.metric == "reply_rate"]
    return s.labels


def test_fixed_rate_step_sizes_its_client_and_labels_it(monkeypatch):
    monkeypatch.setattr(httperf, "MAX_PER_CPU", 4)  # the sizing rule at a cap of 4
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({"rate": 900.0, "duration": 30.0}, cpus=(0, 1))
    w.fixed_one(st, 900.0)
    ((argvs, slots),) = calls
    assert len(argvs) == 5 and slots == [[0], [1], [0], [1], [0]]  # round robin
    assert {_arg(a, "--timeout") for a in argvs} == {"5"}
    assert sum(float(_arg(a, "--rate")) for a in argvs) == pytest.approx(900.0)
    labels = _step_labels(st)
    assert labels["clients"] == 5 and labels["clients_per_cpu"] == 3
    assert labels["client_sockets"] == 5 * httperf.sockets_per_process(NOFILE)
    assert labels["timeout_s"] == 5.0
    assert labels["phase"] == "fixed-rate" and "invalid" not in labels
    # they never split results: the sizing differs between file sizes
    sized = {"clients", "client_sockets", "timeout_s", "clients_per_cpu"}
    assert sized <= set(HttperfSweep.ignored_labels)


def test_fixed_rate_step_on_one_client_cpu_shortens_its_timeout(monkeypatch):
    """Five busy-polling httperf on one CPU would delay each other's replies: four hold
    900 req/s for 4.4 s instead, and the step says so."""
    monkeypatch.setattr(httperf, "MAX_PER_CPU", 4)  # the sizing rule at a cap of 4
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({"rate": 900.0, "duration": 30.0})
    w.fixed_one(st, 900.0)
    ((argvs, slots),) = calls
    assert len(argvs) == 4 and slots == [[0]] * 4
    assert {_arg(a, "--timeout") for a in argvs} == {"4.4"}
    labels = _step_labels(st)
    assert (labels["clients"], labels["clients_per_cpu"], labels["timeout_s"]) == (4, 4, 4.4)


def test_fixed_rate_step_holds_what_its_calls_per_connection_open(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({"rate": 10_000.0, "duration": 10.0, "calls_per_conn": 100})
    assert w.driver.fixed_clients(st, 10_000.0, 10.0) == httperf.Clients(1, 5.0, 1000)
    del calls


class _Remote:
    """A client host (ctx.remote): its processes are sessions of one SSH connection."""

    parties = 1  # environments running their clients there at once (CellClient.shared_by)


def test_fixed_rate_step_on_a_client_host_keeps_to_its_ssh_sessions():
    from virtbench.serving import remote

    assert remote.MAX_SESSIONS == 8  # sshd's MaxSessions default 10, less clock and routes
    cpus = tuple(range(16))
    st, w = _state({"rate": 4000.0, "duration": 30.0}, cpus=cpus)
    assert w.driver.fixed_clients(st, 4000.0, 30.0).processes == 16  # on this host: 1 per CPU
    st.ctx.remote = _Remote()
    c = w.driver.fixed_clients(st, 4000.0, 30.0)
    assert c.processes == 8 and c.timeout == 2.0  # at most 8, whatever the CPUs
    # a co-located environment's clients run there at the same time: they share the 8
    st.ctx.remote.parties = 2
    assert w.driver.fixed_clients(st, 4000.0, 30.0).processes == 4
    st.ctx.remote.parties = 12  # more environments than sessions: one each, at the least
    assert w.driver.fixed_clients(st, 4000.0, 30.0).processes == 1


def test_co_located_environments_know_how_many_run_clients_beside_them():
    """colocation_engine: every busy environment of a cell runs its clients at once, on the
    one client host of the cell when there is one."""
    import threading
    from types import SimpleNamespace

    from virtbench.scenarios import colocation_engine as engine
    from virtbench.serving.remote import CellClient

    seen = []

    class _W:
        def run(self, platform, ctx):
            seen.append(ctx.remote.parties)
            ctx.remote.facts.setdefault("seen_by", []).append(ctx.remote.parties)
            return []

    cell_client = CellClient(None)  # type: ignore[arg-type]
    env = SimpleNamespace(ctx=RunContext(params={}, remote=cell_client), workload=_W())
    gate = threading.Barrier(1)  # parties: the cell's busy environments
    for n in (1, 3):
        gate = threading.Barrier(n)
        e = engine._Env(engine.EnvPlan("target"), None)
        threads = [
            threading.Thread(target=engine._run_workload, args=(env, e, {}, gate, None))
            for _ in range(n)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert seen == [1, 3, 3, 3]
    assert cell_client.parties == 1  # the cell's own view: alone
    assert cell_client.facts["seen_by"] == [1, 3, 3, 3]  # one record of the cell's client


def test_forced_clients_stand_and_running_out_of_sockets_stays_invalid(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate6000_fd_unavail.txt")
    st, w = _state({"rate": 2025.0, "duration": 30.0, "clients": 2})
    w.fixed_one(st, 2025.0)
    ((argvs, _slots),) = calls
    assert len(argvs) == 2  # the user's count, though 11 would hold 2025 x 5 s
    labels = _step_labels(st)
    assert labels["clients"] == 2 and labels["timeout_s"] == 5.0
    assert labels["clients_per_cpu"] == 2
    assert labels["client_sockets"] == 2 * httperf.sockets_per_process(NOFILE)
    assert "load generator ran out of sockets" in labels["invalid"]


def test_sweep_steps_keep_one_httperf_per_client_cpu_and_their_labels(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({}, cpus=(0, 1))
    w.driver.step(st, 3, 2025.0)  # a rate the fixed-rate mode would give 11 processes
    ((argvs, slots),) = calls
    assert slots == [[0], [1]]
    assert {_arg(a, "--timeout") for a in argvs} == {"5"}
    assert set(_step_labels(st)) == SWEEP_STEP_LABELS


def test_client_host_without_client_cpus_counts_its_cpus_once_known():
    """A client host without client_cpus: its CPUs are known after its first run (the solo
    peak's sweep, CellClient.facts['cpus']); counted as 1, a fixed-rate step there gets at
    most MAX_PER_CPU = 4 processes (its timeout shortened to fit) although 8 SSH sessions
    and 8 CPUs are free, and its label says '4 per client CPU' of an 8-CPU host."""
    from virtbench.serving.loadgen import client_cpu_count

    class Remote:
        facts = {"cpus": list(range(8))}
        parties = 1

    ctx = RunContext(params={}, remote=Remote())
    assert client_cpu_count(ctx) == 8
    st, w = _state({"rate": 3000.0, "duration": 5.0}, cpus=())
    st.ctx.remote = Remote()
    c = w.driver.fixed_clients(st, 3000.0, 5.0)
    assert (c.processes, c.per_cpu) == (8, 1)  # the 8 sessions, one per CPU
    assert c.timeout > 2 * httperf.MIN_TIMEOUT_S  # 1.3 s on 4 processes
    # not run there yet (no facts): one, and the log says why
    logged: list[str] = []
    st.ctx.remote, st.ctx.log = _Remote(), logged.append
    assert client_cpu_count(st.ctx) == 1
    assert any("counted as 1" in m for m in logged)


def test_fixed_rate_step_labels_the_processes_that_ran(monkeypatch):
    """A step of fewer connections than sized processes runs one process per connection:
    its clients, client_sockets and clients_per_cpu all describe those."""
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({"rate": 2.0, "duration": 1.0, "clients": 4})
    w.fixed_one(st, 2.0)
    ((argvs, slots),) = calls
    assert len(argvs) == 2 and slots == [[0], [0]]  # 2 connections: 2 processes
    labels = _step_labels(st)
    assert (labels["clients"], labels["clients_per_cpu"]) == (2, 2)
    assert labels["client_sockets"] == 2 * httperf.sockets_per_process(NOFILE)


def test_a_client_cpu_runs_one_busy_polling_httperf():
    # four per CPU starved a TCG guest sharing the CPUs (35 of 2,494 req/s served): the
    # shipped rule is one, its sockets past that from a shorter timeout (1 s at the least)
    assert httperf.MAX_PER_CPU == 1
    c = httperf.size_clients(900, 5.0, 1, NOFILE, cpus=1)
    assert c.processes == 1 and c.timeout == pytest.approx(1.1)


def test_every_httperf_of_a_step_gets_the_receive_buffer_and_its_label(monkeypatch):
    calls = _fake_clients(monkeypatch, "rate2000_ok.txt")
    st, w = _state({}, cpus=(0, 1))
    st.size = 100
    w.driver.step(st, 3, 2025.0)
    ((argvs, _slots),) = calls
    want = f"--recv-buffer={httperf.recv_buffer(100)}"
    assert all(want in a for a in argvs)
    assert _step_labels(st)["client_recv_buffer"] == httperf.recv_buffer(100)
    st2, _ = _state({"recv_buffer": httperf.RECV_BUFFER_DEFAULT})
    st2.size = 100
    assert st2.recv_bytes == httperf.RECV_BUFFER_DEFAULT  # set by hand: kept as given
