"""Long-running stream clients on a client host (the conference suite's users with
`client_host`): one SSH session (the run's ControlMaster, serving/remote.py) runs a small
agent there that starts each ffmpeg pinned to the client host's client CPUs, in its own
process group, forwards its `-progress` lines stamped with that host's monotonic clock, and
answers the controller's questions (the clients' CPU, their sockets' bytes from `ss`).

One session for all of a conference's users, not one per ffmpeg: a conference runs
hundreds of clients at once and sshd refuses sessions past its MaxSessions (remote.py
MAX_SESSIONS). The agent ends every client it started when its session ends (its stdin
closes: the controller stopped, crashed or lost the network), when it is told to stop, and
the clients die with it (PR_SET_PDEATHSIG); each ffmpeg also has `-t` as a safety net.

Progress is stamped where it is read (the client host's CLOCK_MONOTONIC) and mapped to this
host's with an offset measured over the session (the exchange with the least round trip),
so the SSH channel's queueing does not count as the server's delay.
"""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..drivers.ffmpeg import Progress, ProgressParser
from ..errors import WorkloadError
from .remote import SSH_FAILED, CellClient
from .streams import ERROR_LINES, SocketBytes, Usage, parse_ss

REPLY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 3.0  # SIGTERM to SIGKILL, as StreamClient.stop
CLOCK_EXCHANGES = 7

# Runs on the client host (python3, standard library): one JSON request a line on stdin,
# JSON lines out: replies carry "op", a client's lines carry its "i".
AGENT = r"""
import ctypes, json, os, signal, subprocess, sys, threading, time
lock = threading.Lock()
procs = {}
KEEP = ("frame=", "out_time_us=", "progress=")
def say(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
def reap_all(sig):
    for p in list(procs.values()):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            pass
def on_signal(num, frame):
    reap_all(signal.SIGKILL)
    os._exit(1)
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, on_signal)
libc = ctypes.CDLL(None, use_errno=True)
def child_setup(cpus):
    def f():
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the agent
        if cpus:
            os.sched_setaffinity(0, cpus)
    return f
def progress(i, p):
    buf = []
    for line in p.stdout:
        if line.startswith(KEEP):
            buf.append(line.rstrip("\n"))
            if line.startswith("progress="):
                say({"i": i, "t": time.monotonic(), "l": buf})
                buf = []
def errors(i, p):
    for line in p.stderr:
        if line.strip():
            say({"i": i, "e": line.rstrip()})
    say({"i": i, "rc": p.wait()})
def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "time":
        say({"op": op, "t": time.monotonic(), "cpus": sorted(os.sched_getaffinity(0))})
    elif op == "start":
        i = req["i"]
        try:
            p = subprocess.Popen(req["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, start_new_session=True, text=True,
                                 errors="replace", preexec_fn=child_setup(req.get("cpus")))
        except OSError as exc:
            say({"op": op, "i": i, "error": "%s: %s" % (req["argv"][0], exc.strerror),
                 "missing": isinstance(exc, (FileNotFoundError, PermissionError))})
            continue
        procs[i] = p
        for target in (progress, errors):
            threading.Thread(target=target, args=(i, p), daemon=True).start()
        say({"op": op, "i": i, "pid": p.pid, "t": time.monotonic()})
    elif op == "usage":
        say({"op": op, "t": time.monotonic(),
             "cpu": {str(i): cpu_s(p.pid) for i, p in procs.items()}})
    elif op == "ss":
        r = subprocess.run(req["argv"], capture_output=True, text=True)
        say({"op": op, "stdout": r.stdout})
    elif op == "stop":
        reap_all(signal.SIGTERM)
        end = time.monotonic() + req.get("timeout", 3)
        for p in procs.values():
            try:
                p.wait(timeout=max(0.01, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        reap_all(signal.SIGKILL)
        for p in procs.values():
            p.wait()
        say({"op": op})
        break
reap_all(signal.SIGKILL)
"""


@dataclass
class RemoteStreamClient:
    """One ffmpeg on the client host: what the conference reads of a StreamClient."""

    argv: list[str]
    cpus: list[int] | None
    kind: str  # "publish" or "play"
    user: int
    stream: str
    index: int = 0
    progress: list[Progress] = field(default_factory=list)
    errors: collections.deque = field(default_factory=lambda: collections.deque(maxlen=40))
    exit_code: int | None = None
    pid: int | None = None  # on the client host
    _parser: ProgressParser = field(default_factory=ProgressParser)

    def poll(self) -> int | None:
        return self.exit_code

    def said(self) -> str:
        return " | ".join(list(self.errors)[-ERROR_LINES:]) or "nothing on stderr"


class RemoteUsers:
    """The agent on the client host, one per cell: starts the users there, reads them."""

    def __init__(self, cell: CellClient, wrap_ss: bool = False) -> None:
        self.cell = cell
        self.host = cell.client.ssh.name
        self.clients: dict[int, RemoteStreamClient] = {}
        self.cpus: list[int] = []
        self.offset = 0.0  # add to the client host's monotonic time: ours
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._said: collections.deque[str] = collections.deque(maxlen=ERROR_LINES)
        ssh = cell.client.ssh
        self._proc = subprocess.Popen(  # noqa: S603 - argv list, never a shell
            ssh.argv(ssh.python, "-u", "-c", shlex.quote(AGENT)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # a Ctrl-C on our terminal reaches us, not ssh first
        )
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_errors, daemon=True),
        ]
        for th in self._threads:
            th.start()
        try:
            self._sync_clock()
        except BaseException:
            self.close()
            raise

    # --- the session ------------------------------------------------------------------
    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "op" in msg:
                self._replies.put(msg)
            elif (c := self.clients.get(msg.get("i", -1))) is not None:
                self._client_line(c, msg)
        self._replies.put({"op": "gone"})

    def _client_line(self, c: RemoteStreamClient, msg: dict[str, Any]) -> None:
        if "l" in msg:
            t = float(msg["t"]) + self.offset
            for text in msg["l"]:
                if (p := c._parser.feed(text, t)) is not None:
                    c.progress.append(p)
        elif "e" in msg:
            c.errors.append(str(msg["e"]))
        elif "rc" in msg:
            c.exit_code = int(msg["rc"])

    def _read_errors(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            if line.strip() and "Permanently added" not in line:
                self._said.append(line.rstrip())

    def _ask(self, req: dict[str, Any]) -> dict[str, Any]:
        """Send one request, return its reply (requests are answered in order)."""
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise self._lost()
        try:
            self._proc.stdin.write(json.dumps(req) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._lost() from exc
        try:
            reply = self._replies.get(timeout=REPLY_TIMEOUT_S)
        except queue.Empty as exc:
            raise WorkloadError(
                f"client host {self.host}: its agent did not answer {req['op']!r} within"
                f" {REPLY_TIMEOUT_S:.0f} s"
            ) from exc
        if reply.get("op") == "gone":
            raise self._lost()
        return reply

    def _lost(self) -> WorkloadError:
        code = self._proc.poll()
        said = " | ".join(self._said) or "nothing on stderr"
        if code == SSH_FAILED:
            return WorkloadError(f"client host {self.host}: the SSH session was lost: {said}")
        return WorkloadError(f"client host {self.host}: its agent ended (exit {code}): {said}")

    def _sync_clock(self) -> None:
        """The offset of the client host's monotonic clock from ours (least round trip)."""
        best: tuple[float, float] | None = None
        for _ in range(CLOCK_EXCHANGES):
            t0 = time.monotonic()
            reply = self._ask({"op": "time"})
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[1]:
                best = ((t0 + t1) / 2 - float(reply["t"]), t1 - t0)
            self.cpus = [int(c) for c in reply.get("cpus", [])]
        assert best is not None
        self.offset = best[0]
        self.cell.record({"cpus": self.cpus})
        self.cell.facts["agent_rtt_ms"] = round(best[1] * 1000, 3)

    # --- what the conference does -------------------------------------------------------
    def start(
        self, argv: list[str], cpus: list[int] | None, kind: str, user: int, stream: str
    ) -> RemoteStreamClient:
        c = RemoteStreamClient(argv, cpus, kind, user, stream, index=len(self.clients))
        self.clients[c.index] = c
        reply = self._ask({"op": "start", "i": c.index, "argv": argv, "cpus": cpus})
        if "error" in reply:
            del self.clients[c.index]
            hint = ": apt-get install ffmpeg there" if reply.get("missing") else ""
            raise WorkloadError(f"client host {self.host}: cannot start {reply['error']}{hint}")
        c.pid = int(reply["pid"])
        return c

    def usages(self, clients: list[RemoteStreamClient]) -> dict[int, Usage]:
        """Each running client's CPU seconds now (by id(), as the workload keys them)."""
        reply = self._ask({"op": "usage"})
        t = float(reply["t"]) + self.offset
        cpu = reply.get("cpu", {})
        return {
            id(c): Usage(t, float(v)) for c in clients if (v := cpu.get(str(c.index))) is not None
        }

    def socket_bytes(self, port: int) -> SocketBytes:
        """The client host's sockets to server port `port` (ss there)."""
        argv = ["ss", "-tinH", "state", "established", "dport", "=", f":{port}"]
        return parse_ss(str(self._ask({"op": "ss", "argv": argv}).get("stdout", "")))

    def check(self) -> None:
        """A WorkloadError if the session to the client host ended (its clients with it)."""
        if self._proc.poll() is not None:
            raise self._lost()

    def stop(self) -> None:
        """Stop every client (SIGTERM, SIGKILL after STOP_TIMEOUT_S), then the session."""
        try:
            if self._proc.poll() is None:
                self._ask({"op": "stop", "timeout": STOP_TIMEOUT_S})
        except WorkloadError:
            pass  # the session is gone: the agent's end killed its clients
        finally:
            self.close()

    def close(self) -> None:
        """End the session: its stdin closes, so an agent still there kills its clients."""
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=STOP_TIMEOUT_S + 5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for th in self._threads:
            th.join(timeout=2)
