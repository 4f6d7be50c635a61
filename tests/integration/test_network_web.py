"""Network and web suites end to end on the native platform with the real tools (~1 min)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest

from virtbench.errors import VirtbenchError, WorkloadError
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.tools import which
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext

pytestmark = pytest.mark.integration

NEEDED = ("nginx", "httperf", "wrk", "iperf3", "sockperf")


@pytest.fixture(scope="module", autouse=True)
def _tools():
    missing = [t for t in NEEDED if which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {missing}")


@pytest.fixture()
def native():
    with NativePlatform(PlatformSpec("native", "native"), "vb-itest-net") as p:
        yield p


def ctx_for(name: str, **params) -> RunContext:
    w = registry.load_all()[name]
    full = {k: v.default for k, v in w.params.items()} | params
    cpus = sorted(os.sched_getaffinity(0))
    server, client = ([cpus[-1]], [cpus[0]]) if len(cpus) > 1 else (None, None)
    return RunContext(params=full, cpus=server, client_cpus=client)


def run(platform, name: str, **params):
    return registry.load_all()[name]().run(platform, ctx_for(name, **params))


def by_metric(samples, metric):
    return [s for s in samples if s.metric == metric]


@pytest.mark.parametrize("name", ["iperf3-tcp", "iperf3-udp", "sockperf-tcp-rr", "sockperf-udp-rr"])
def test_network_suite_native(native, name):
    samples = run(native, name, duration=2)
    primary = registry.load_all()[name].primary().name
    (head,) = by_metric(samples, primary)
    assert head.value > 0
    assert by_metric(samples, "client_cpu_pct")[0].role == "client"


def test_web_sweep_absolute_and_wrk(native):
    samples = run(
        native,
        "httperf-sweep",
        file_sizes=[1, 10],
        mode="absolute",
        rate_start=200,
        rate_step=200,
        max_steps=3,
        step_duration=1,
    )
    peaks = by_metric(samples, "peak_throughput")
    assert [p.labels["file_size_kb"] for p in peaks] == [1, 10]
    for p in peaks:
        assert p.value > 100 and p.labels["offered_rate"] in (200, 400, 600)
    steps = by_metric(samples, "reply_rate")
    assert {s.labels["step"] for s in steps} == {0, 1, 2}
    assert all("offered_rate" in s.labels for s in steps)
    maxed = run(native, "wrk-max", file_sizes=[1], duration=1)
    assert by_metric(maxed, "requests_per_s")[0].value > 0
    assert by_metric(maxed, "latency_p99_ms")[0].value > 0


def test_fixed_rate_and_parallel_clients(native):
    # fixed-rate mode (what co-location's load=PCT sets): one step per size at `rate`
    samples = run(native, "httperf-sweep", file_sizes=[1], rate=300.0, duration=1, clients=2)
    (head,) = by_metric(samples, "peak_throughput")
    assert head.labels["phase"] == "fixed-rate" and head.value > 0
    (step,) = by_metric(samples, "reply_rate")
    assert step.labels["offered_rate"] == 300 and step.labels["clients"] == 2
    assert step.labels["closes"] == "server"
    (client,) = by_metric(samples, "client_cpu_pct")
    assert client.role == "client"


def test_many_neighbours_at_ten_percent_of_solo_peak(tmp_path):
    from click.testing import CliRunner

    from virtbench.cli import cli

    campaign = tmp_path / "many.toml"
    campaign.write_text(
        "[campaign]\nname = 'web-many'\nrepetitions = 1\nwarmup = 0\ncell_timeout = 120\n"
        "scenarios = ['many:2']\n[[platforms]]\nname = 'native'\ntype = 'native'\n"
        "[suites.web]\ntest_cases = ['httperf-sweep']\nfile_sizes = [1]\nmode = 'absolute'\n"
        "rate_start = 400\nrate_step = 400\nmax_steps = 2\nstep_duration = 1.0\n"
        "duration = 2.0\n"
    )
    runner = CliRunner()
    res = runner.invoke(cli, ["run", str(campaign), "--results-dir", str(tmp_path), "--no-report"])
    assert res.exit_code == 0, res.output
    out = runner.invoke(
        cli, ["results", "--run", "latest", "--results-dir", str(tmp_path), "--format", "jsonl"]
    )
    rows = [json.loads(line) for line in out.output.splitlines() if line.strip()]
    offered = {
        r["role"]: r["value"]
        for r in rows
        if r["metric"] == "peak_offered_rate" and r["scenario"] == "many:2"
    }
    # both environments ran one fixed-rate step at 10 % of the solo peak. Native serves the
    # 400/800 sweep in full, which never saturated: it is measured once more reaching twice
    # as high (800/1,600), and that top, served in full too, is kept as a lower bound (a
    # reply rate of a step offering at most 1,600 req/s; replies can end a little above it)
    assert set(offered) == {"target", "neighbour-1"}
    assert all(1 <= v <= 0.1 * 1600 * 1.05 for v in offered.values())


def test_capacity_sweep_finds_a_peak(native):
    samples = run(
        native,
        "httperf-sweep",
        file_sizes=[1],
        start_fraction=0.5,
        step_fraction=0.25,
        max_fraction=1.5,
        step_duration=1,
        probe_duration=1,
    )
    (cap,) = by_metric(samples, "capacity_probe")
    (peak,) = by_metric(samples, "peak_throughput")
    assert cap.value > 0 and peak.value > 0


def test_user_port_in_use_is_a_clear_error(native):
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(VirtbenchError, match=f"port = {port}: port already in use"):
            run(native, "wrk-max", file_sizes=[1], duration=1, port=port)


class _Unreachable(NativePlatform):
    kind = "native-unreachable"

    def endpoint(self, port):
        return ("127.0.0.1", 9)  # discard port: nothing listens there


def test_unreachable_server(monkeypatch):
    from virtbench.serving import readiness

    monkeypatch.setattr(readiness, "READY_TIMEOUT_S", 3.0)  # the real default waits 60 s
    with (
        _Unreachable(PlatformSpec("x", "native"), "vb-itest-unr") as p,
        pytest.raises(WorkloadError, match="unreachable at 127.0.0.1:9"),
    ):
        run(p, "wrk-max", file_sizes=[1], duration=1)


def test_server_dying_mid_sweep_keeps_samples(native):
    def killer():
        time.sleep(3.5)
        for pid in native.accounting().pids:
            os.killpg(pid, signal.SIGKILL)

    threading.Thread(target=killer, daemon=True).start()
    with pytest.raises(WorkloadError, match="server exited") as info:
        run(
            native,
            "httperf-sweep",
            file_sizes=[1],
            mode="absolute",
            rate_start=100,
            rate_step=100,
            max_steps=20,
            step_duration=1,
        )
    kept = info.value.samples
    assert by_metric(kept, "reply_rate"), "steps measured before the death must be kept"
