"""Issue 15's faults, their messages: a command not found in the environment (java), a server
that does not come up in time, a JMeter run where no request succeeded, a dockerd that does
not start, packages apt cannot install."""

from __future__ import annotations

import subprocess

import pytest

from virtbench import setup_host
from virtbench.drivers import jmeter
from virtbench.errors import WorkloadError
from virtbench.platforms.base import ExecResult, check
from virtbench.platforms.container import dockerd
from virtbench.platforms.procs import HostProcess, run_host
from virtbench.serving.server import not_ready


def test_missing_command_on_the_host_is_exit_127_and_named(monkeypatch, tmp_path):
    """run_host as a shell would: exit 127, not a FileNotFoundError traceback; check() then
    names the Debian package (java: openjdk-17-jre-headless) and the PATH looked in."""
    monkeypatch.setenv("PATH", str(tmp_path))
    r = run_host(["java", "-version"])
    assert r.returncode == 127 and str(tmp_path) in r.stderr
    with pytest.raises(WorkloadError) as e:
        check(r, "scimark")
    msg = str(e.value)
    assert msg.startswith("scimark: java exited 127")
    assert "command not found" in msg and "openjdk-17-jre-headless" in msg
    assert "virtbench images build" in msg  # containers and VMs: the shared image
    with pytest.raises(WorkloadError, match="openjdk-17-jre-headless"):
        HostProcess(["java", "-version"])


# what crun and runc said here (exit 255) when exec'ing a command the image does not have
CRUN_NOT_FOUND = "executable file `java` not found in $PATH: No such file or directory"
RUNC_NOT_FOUND = (
    'time="2026-11-26T17:26:34Z" level=error msg="exec failed: unable to start container'
    ' process: exec: \\"java\\": executable file not found in $PATH"'
)


@pytest.mark.parametrize("runtime, stderr", [("crun", CRUN_NOT_FOUND), ("runc", RUNC_NOT_FOUND)])
def test_missing_command_in_a_container_is_named(runtime, stderr):
    r = ExecResult(["java", "-version"], 255, "", stderr, 0.01)
    with pytest.raises(WorkloadError) as e:
        check(r, "scimark")
    assert "command not found" in str(e.value) and "openjdk-17-jre-headless" in str(e.value)


def test_other_failures_get_no_not_found_hint():
    r = ExecResult(["java"], 1, "", "Error: Could not find or load main class X", 0.1)
    with pytest.raises(WorkloadError) as e:
        check(r, "scimark")
    assert "command not found" not in str(e.value) and "main class X" in str(e.value)
    unknown = ExecResult(["vb-no-such-tool"], 127, "", "sh: vb-no-such-tool: not found", 0.0)
    with pytest.raises(WorkloadError, match="'vb-no-such-tool' is not installed"):
        check(unknown, "x")


def test_not_ready_names_the_setting_and_the_servers_last_lines():
    out = ExecResult(
        ["java"], -15, "\n".join(f"line {i}" for i in range(20)), "hsqldb: slow\n", 5.0
    )
    msg = not_ready(
        "app: server unreachable at 127.0.0.1:9 after 5s", "suites.x.ready_timeout", out
    )
    assert "suites.x.ready_timeout bounds the wait" in msg
    assert "line 19" in msg and "hsqldb: slow" in msg and "line 5 " not in msg + " "
    assert not_ready("e", None, ExecResult(["x"], 0, "", "", 0.0)).endswith("printed: nothing")


def test_no_request_succeeded_says_the_codes():
    s = jmeter.Stats(4.0, 8.0, completed=3, errors=3)
    s.codes = {"Non HTTP response code: java.net.ConnectException": 3}
    why = jmeter.invalid_reason(s, 0.1, 1.0)
    assert why is not None and "no request succeeded" in why and "ConnectException" in why
    assert jmeter.invalid_reason(jmeter.Stats(4.0, 8.0), 0.1, 1.0) == (
        "no request completed in the measured period"
    )


def test_dockerd_start_failure_message():
    argv = dockerd.daemon_argv(True)
    msg = dockerd.start_failure(argv, 1, "unknown flag: --bogus")
    assert msg.startswith("dockerd exited 1") and "--userland-proxy=true" in msg
    assert str(dockerd.LOG_FILE) in msg and msg.endswith("unknown flag: --bogus")
    assert "did not answer within 60s" in dockerd.start_failure(argv, None, "(empty log)")


def test_setup_installs_what_it_can_and_names_what_it_cannot(monkeypatch):
    calls: list[list[str]] = []

    def apt(args: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        bad = "docker.io" in args and "jmeter" in args or args[-1] == "docker.io"
        err = "E: Package 'docker.io' has no installation candidate\n" if bad else ""
        return subprocess.CompletedProcess(args, 100 if bad else 0, "", err)

    monkeypatch.setattr(setup_host, "_apt", apt)
    monkeypatch.setattr(setup_host, "missing_packages", lambda: ["docker.io", "jmeter"])
    monkeypatch.setattr(setup_host.os, "geteuid", lambda: 0)
    with pytest.raises(setup_host.NotInstalled) as e:
        setup_host.install_packages(lambda m: None)
    msg = str(e.value)
    assert "could not install 1 of 2 packages" in msg
    assert "docker.io (needed for dockerd: Docker engine" in msg
    assert "has no installation candidate" in msg
    assert [*setup_host._INSTALL, "jmeter"] in calls  # the others were installed one by one


def test_jmeter_failure_quotes_its_error_line_not_stack_frames():
    stderr = (
        "Creating summariser <summary>\n"
        "Error in NonGUIDriver com.thoughtworks.xstream.io.StreamException:  : only whitespace\n"
        "2026/11/26 17:26:40 ERROR - jmeter.save.SaveService: Conversion error\n"
        "\tat com.thoughtworks.xstream.io.ReaderWrapper.hasMoreChildren(ReaderWrapper.java:32)\n"
        "\t... 28 more\n"
    )
    with pytest.raises(WorkloadError) as e:
        jmeter.check_run(0, "", stderr)
    msg = str(e.value)
    assert msg.startswith("jmeter failed (exit 0): Error in NonGUIDriver com.thoughtworks"), msg
    assert "SaveService: Conversion error" in msg and "ReaderWrapper" not in msg, msg
