"""Issue 15's faults of the java and application suites, for real on the native platform: no
`java` where the workload runs, an application server that does not come up in time, a
JMeter plan that fails and a target that does not answer. Each: a clear message (the cell
failed with it, or its samples flagged invalid) and no process of the cell left running."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from virtbench.drivers import jmeter
from virtbench.errors import WorkloadError
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.ports import candidate_ports, port_free_on_host
from virtbench.runner.cell import measure
from virtbench.serving.server import Served, serve
from virtbench.tools import require
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext

pytestmark = pytest.mark.integration


def _params(name: str, **over) -> dict:
    wcls = registry.load_all()[name]
    require([*wcls.tools, *wcls.host_tools], needed_by=name)
    return {k: p.default for k, p in wcls.params.items()} | over


def _java_procs(marker: str) -> list[str]:
    """Command lines of live java processes that mention `marker` (the cell's own)."""
    r = subprocess.run(["pgrep", "-af", "java"], capture_output=True, text=True)
    return [ln for ln in r.stdout.splitlines() if marker in ln]


def _path_without(tmp_path: Path, name: str) -> str:
    """A PATH holding every command of /usr/bin and /bin except `name` (links)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for f in Path(d).iterdir():
            if f.name != name and not (bin_dir / f.name).exists():
                (bin_dir / f.name).symlink_to(f)
    return str(bin_dir)


def _native(tmp_path: Path, name: str) -> NativePlatform:
    return NativePlatform(PlatformSpec("native", "native", {"workdir": str(tmp_path)}), name)


@pytest.mark.parametrize("test_case", ["scimark", "daytrader-jmeter"])
def test_no_java_where_the_workload_runs(tmp_path, monkeypatch, test_case):
    """`java` absent from the environment's PATH (the host still has it, so the run's
    preflight passes): the cell fails naming the command and its Debian package."""
    quick = {"scimark": {"min_time": 0.05, "iterations": 2}}.get(test_case, {})
    params = _params(test_case, heap_mib=64, **quick)
    wcls = registry.load_all()[test_case]
    with _native(tmp_path, "vb-it-nojava") as native:
        monkeypatch.setenv("PATH", _path_without(tmp_path, "java"))
        out = measure(
            native, RunContext(params=params, timeout=120), lambda c, s: wcls().run(native, c)
        )
        monkeypatch.undo()
        assert os.listdir(Path(native.workdir)) == []  # its scratch dir removed all the same
    print(f"\n{test_case}: {out.status}: {out.error}")
    assert out.status == "failed" and out.samples == []
    assert out.error is not None and "internal error" not in out.error
    assert "java" in out.error and "openjdk-17-jre-headless" in out.error, out.error
    assert "command not found" in out.error, out.error


def test_hung_server_is_stopped_with_its_last_lines(tmp_path):
    """serve(): a server that never answers is stopped after ready_timeout; the error names
    the setting and what the server printed."""
    marker = f"vb-it-hung-{os.getpid()}"
    sleep = f"sleep {3000 + os.getpid() % 1000}.5"  # a command line no one else runs
    argv = ["sh", "-c", f"echo {marker} starting; echo still loading >&2; exec {sleep}"]
    with _native(tmp_path, "vb-it-hung") as native, pytest.raises(WorkloadError) as e:  # noqa: SIM117
        with serve(
            native,
            lambda port: argv,
            RunContext(params={}),
            what="hung: sh",
            port_key="suites.x.port",
            ready_timeout=1.0,
            ready_key="suites.x.ready_timeout",
        ):
            pytest.fail("a server that never listens was reported ready")
    assert subprocess.run(["pgrep", "-f", sleep]).returncode == 1  # it was stopped
    msg = str(e.value)
    print(f"\nhung server: {msg}")
    assert "unreachable" in msg and "suites.x.ready_timeout bounds the wait" in msg, msg
    assert f"{marker} starting" in msg and "still loading" in msg, msg


def test_application_server_not_up_in_time(tmp_path):
    """Tomcat + HSQLDB still populating a big database in the interpreter when ready_timeout
    (its minimum, 5 s) expires: the cell fails naming the setting; no JVM is left."""
    params = _params(
        "daytrader-jmeter",
        ready_timeout=5,
        accounts=1_000_000,
        quotes=1_000_000,
        jit="interpreter",
        db="mem",
    )
    wcls = registry.load_all()["daytrader-jmeter"]
    before = _java_procs("VbTrade")
    with _native(tmp_path, "vb-it-slowapp") as native:
        out = measure(
            native, RunContext(params=params, timeout=120), lambda c, s: wcls().run(native, c)
        )
        assert os.listdir(Path(native.workdir)) == []
    print(f"\nslow server: {out.status}: {out.error}")
    assert out.status == "failed" and out.error is not None
    assert "daytrader-jmeter: Tomcat: server unreachable" in out.error, out.error
    assert "after 5s" in out.error, out.error
    assert "suites.application.ready_timeout bounds the wait" in out.error, out.error
    assert "the server printed: vb-trade: populating 1000000 accounts" in out.error, out.error
    assert _java_procs("VbTrade") == before  # the server's JVM was stopped


def _client_run(tmp_path, monkeypatch, port: int, plan: bytes | None = None):
    """The application suite's JMeter client (1 s dry run, 2 s measured) against
    127.0.0.1:port, with `plan` in place of the suite's own."""
    from virtbench.appstack import build as appstack
    from virtbench.workloads.application import DayTraderJMeter

    params = _params("daytrader-jmeter", dry_run=1, duration=2, interval=1, users=2)
    params |= {"client_heap_mib": 64, "request_timeout": 1.0}
    if plan is not None:
        real = appstack.resource
        monkeypatch.setattr(appstack, "resource", lambda n: plan if n == appstack.PLAN else real(n))
    ctx = RunContext(params=params, timeout=60)
    built = appstack.build()
    w = DayTraderJMeter()
    served = Served(proc=None, host="127.0.0.1", port=port, inner_port=port)  # type: ignore[arg-type]
    text, run = w._client(served, ctx, built)
    return w, w.results(jmeter.parse(text), run, {}, ctx)


def _closed_port() -> int:
    return next(p for p in candidate_ports(0) if port_free_on_host(p))


def test_jmeter_against_a_target_that_does_not_answer(tmp_path, monkeypatch):
    """Every request refused: the samples are kept, all flagged invalid with JMeter's codes."""
    _, samples = _client_run(tmp_path, monkeypatch, _closed_port())
    by = {s.metric: s for s in samples if s.metric != "interval_throughput"}
    why = by["throughput"].labels.get("invalid", "")
    print(f"\nunreachable target: invalid = {why}")
    assert "no request succeeded" in why and "ConnectException" in why, why
    assert by["throughput"].value == 0 and by["error_pct"].value == 100
    intervals = [s for s in samples if s.metric == "interval_throughput"]
    assert intervals and all(s.labels.get("invalid") for s in intervals)
    assert _java_procs("vb-jmeter") == []


def test_jmeter_plan_that_fails(tmp_path, monkeypatch):
    """A plan JMeter cannot load: the client fails with JMeter's own words."""
    with pytest.raises(WorkloadError) as e:
        _client_run(tmp_path, monkeypatch, _closed_port(), b"<jmeterTestPlan><hashTree><oops")
    msg = str(e.value)
    print(f"\nbad plan: {msg}")
    assert msg.startswith("jmeter failed (exit"), msg
    assert "Error in NonGUIDriver" in msg and "\tat " not in msg, msg  # JMeter's own words
    assert _java_procs("vb-jmeter") == []
