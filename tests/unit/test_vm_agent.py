"""Agent and QMP protocol handling, against replies captured from a real guest and QEMU."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from virtbench.platforms.vm import guest
from virtbench.platforms.vm.agent import Agent, AgentError, ExecStatus
from virtbench.platforms.vm.jsonsock import ChannelError, JsonSocket

DATA = Path(__file__).parent.parent / "data" / "vm"


def test_exec_status_exited_with_output():
    replies = json.loads((DATA / "qga-exec-status.json").read_text())
    done = ExecStatus.from_reply(replies["exited"])
    assert done.exited and done.returncode == 3
    assert done.stdout == b"out\n" and done.stderr == b"err\n"


def test_exec_status_running_and_killed():
    replies = json.loads((DATA / "qga-exec-status.json").read_text())
    assert not ExecStatus.from_reply(replies["running"]).exited
    killed = ExecStatus.from_reply(replies["killed"])
    assert killed.exited and killed.returncode == 128 + 9


def test_vcpu_thread_ids_from_query_cpus_fast():
    cpus = json.loads((DATA / "qmp-query-cpus-fast.json").read_text())
    ordered = [c["thread-id"] for c in sorted(cpus, key=lambda c: c["cpu-index"])]
    assert len(ordered) == 2 and all(isinstance(t, int) for t in ordered)


def test_debug_threads_names_vcpus():
    names = json.loads((DATA / "qemu-thread-names.json").read_text())
    assert "CPU 0/TCG" in names and "CPU 1/TCG" in names


class FakeServer:
    """A unix socket server that answers with canned bytes per received line."""

    def __init__(self, path: Path, answer) -> None:
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(4)
        self.answer = answer
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            buf = b""
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    line = line.lstrip(b"\xff")
                    self.received.append(line)
                    conn.sendall(self.answer(json.loads(line)))


def test_agent_sync_discards_stale_answers(tmp_path):
    # real bytes: qemu-ga answers the 0xff parser reset with an error, then the 0xff
    # delimiter and the sync reply; the client must skip everything before the delimiter
    captured = (DATA / "qga-sync-delimited.bin").read_bytes()
    assert captured.index(b"\xff") > 0 and b'"return": 4242' in captured

    def answer(msg):
        if msg["execute"] == "guest-sync-delimited":
            reply = captured.replace(b"4242", str(msg["arguments"]["id"]).encode())
            return b'{"return": {}}\n' + reply  # plus a stale answer queued from before
        if msg["execute"] == "guest-exec":
            return b'{"return": {"pid": 77}}\n'
        if msg["execute"] == "guest-ping":
            return b'{"return": {}}\n'
        return b'{"error": {"class": "GenericError", "desc": "nope"}}\n'

    FakeServer(tmp_path / "qga.sock", answer)
    agent = Agent(tmp_path / "qga.sock", timeout=5)
    agent.wait_ready(time.monotonic() + 5)
    assert agent.exec_start(["/bin/true"]) == 77
    with pytest.raises(AgentError, match="nope"):
        agent.command("guest-info")
    agent.close()


def test_agent_not_ready_times_out(tmp_path):
    FakeServer(tmp_path / "qga.sock", lambda msg: b"")  # accepts, never answers
    agent = Agent(tmp_path / "qga.sock", timeout=1)
    with pytest.raises(AgentError, match="not ready"):
        agent.wait_ready(time.monotonic() + 1.5)


def test_agent_reports_dead_qemu(tmp_path):
    agent = Agent(tmp_path / "missing.sock")
    with pytest.raises(AgentError, match="exited"):
        agent.wait_ready(time.monotonic() + 5, alive=lambda: False)


def test_jsonsock_closed_connection(tmp_path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(tmp_path / "s"))
    srv.listen(1)
    conn = JsonSocket(tmp_path / "s")
    peer, _ = srv.accept()
    peer.close()
    with pytest.raises(ChannelError, match="closed"):
        conn.recv(time.monotonic() + 2)


def test_guest_env_keeps_path():
    env = guest.guest_env({"FOO": "1"})
    assert env is not None and "FOO=1" in env and any(e.startswith("PATH=/") for e in env)
    assert guest.guest_env(None) is None


def test_commands_run_in_their_own_process_group():
    class Rec:
        def exec_start(self, argv, env=None):
            self.argv = argv
            return 5

    rec = Rec()
    assert guest.start(rec, ["sysbench", "cpu", "run"], None) == 5
    assert rec.argv[:2] == [guest.BUSYBOX, "setsid"] and rec.argv[-3:] == ["sysbench", "cpu", "run"]
    # busybox would run its own applets for names like sh, ls, ip: env finds Debian's in PATH
    assert rec.argv[2:4] == [guest.GUEST_ENV, "--"]
