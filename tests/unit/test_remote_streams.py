"""The client host's stream agent (serving/remote_streams.py) run for real, with the SSH hop
replaced by a local shell (the agent's code is what runs on the client host): clients
started, their progress read and clock-mapped, their CPU and exit codes, a missing program
named, and nothing left running when the session stops or is cut."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from virtbench.errors import WorkloadError
from virtbench.serving.remote import CellClient, RemoteClient, SshTarget
from virtbench.serving.remote_streams import AGENT, RemoteUsers

# a stand-in for an ffmpeg user: a -progress block every 0.1 s, then a line on stderr
FAKE = (
    "import sys, time\n"
    "for i in range(int(sys.argv[1])):\n"
    "    print(f'frame={i}\\nout_time_us={i * 100000}\\nprogress=continue', flush=True)\n"
    "    time.sleep(0.1)\n"
    "print('done', file=sys.stderr)\n"
)


class LocalShell(SshTarget):
    """The client host is this one: the remote command runs in a local shell, as sshd
    would run it in the user's."""

    def argv(self, *remote: str) -> list[str]:
        return ["sh", "-c", " ".join(remote)]


def _users() -> RemoteUsers:
    target = LocalShell("c1", "127.0.0.1", python=sys.executable)
    client = RemoteClient(target, target_address="127.0.0.1")
    cell = CellClient(client)
    cell.facts = {"host": "c1"}  # no clock exchange over a real SSH here
    return RemoteUsers(cell)


def _agents() -> list[int]:
    r = subprocess.run(["pgrep", "-f", "PR_SET_PDEATHSIG"], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split() if int(p) != os.getpid()]


def test_clients_progress_usage_and_exit():
    users = _users()
    try:
        assert users.cpus == sorted(os.sched_getaffinity(0))
        assert abs(users.offset) < 0.05  # one machine: one monotonic clock
        short = users.start([sys.executable, "-c", FAKE, "5"], None, "play", 2, "u1")
        long = users.start([sys.executable, "-c", FAKE, "100"], [0], "publish", 1, "u1")
        time.sleep(1.0)
        assert short.poll() == 0 and short.said() == "done"
        assert [p.frame for p in short.progress] == [0, 1, 2, 3, 4]
        assert short.progress[-1].out_time_s == pytest.approx(0.4)
        assert short.progress[-1].t <= time.monotonic()  # stamped there, mapped to ours
        assert long.poll() is None and len(long.progress) >= 5
        use = users.usages([short, long])
        assert id(short) not in use and use[id(long)].cpu_s >= 0  # the gone one is not read
        assert users.socket_bytes(9) == {}  # nothing connects to port 9
        pid = long.pid
    finally:
        users.stop()
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not _agents()


def test_missing_program_is_named():
    users = _users()
    try:
        with pytest.raises(WorkloadError) as err:
            users.start(["vb-no-such-ffmpeg", "-i", "x"], None, "play", 1, "u1")
        assert "client host c1" in str(err.value) and "vb-no-such-ffmpeg" in str(err.value)
        assert "apt-get install ffmpeg there" in str(err.value)
    finally:
        users.stop()
    assert not _agents()


def test_cut_session_kills_the_clients():
    users = _users()
    c = users.start([sys.executable, "-c", FAKE, "600"], None, "play", 1, "u1")
    time.sleep(0.3)
    # the session drops (the controller died, the network went): the agent's stdin closes
    os.killpg(users._proc.pid, signal.SIGKILL)
    users._proc.wait()
    with pytest.raises(WorkloadError) as err:
        users.check()
    assert "client host c1" in str(err.value)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(c.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the client outlived its session")
    users.close()
    assert not _agents()


def test_agent_is_plain_python():
    # it runs on a client host without virtbench: the standard library only
    compile(AGENT, "agent", "exec")
    assert "virtbench" not in AGENT
