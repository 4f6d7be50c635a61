"""Long-running stream clients on the host (the conference suite's users): each ffmpeg is
pinned to a client CPU, in its own process group, on the cell's client path (netpath), and
read while it runs: its `-progress` blocks are stamped as they arrive (drivers/ffmpeg.py),
its CPU is read from /proc at step boundaries, and the bytes of every client socket to the
server from the kernel's TCP counters (`ss -ti`: ffmpeg's send/recv never show in
/proc/PID/io).

run_host/HostProcess (platforms/procs.py) give a tool's output only once it has exited; a
user runs for the whole cell and its progress must be read live, hence this class.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..drivers.ffmpeg import Progress, ProgressParser

CLK_TCK = os.sysconf("SC_CLK_TCK")
ERROR_LINES = 6  # the last lines of a client's stderr kept for an error message


@dataclass
class Usage:
    """A client's CPU seconds (user + system) at one moment."""

    t: float
    cpu_s: float


def read_usage(pid: int) -> Usage | None:
    """CPU from /proc/PID/stat (None: the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return Usage(time.monotonic(), (int(fields[11]) + int(fields[12])) / CLK_TCK)


# per client socket (its local address): (bytes the server acknowledged, bytes received)
SocketBytes = dict[str, tuple[int, int]]


def parse_ss(text: str) -> SocketBytes:
    """`ss -tinH state established dport = :PORT`: a socket line, then its info line."""
    out: SocketBytes = {}
    local = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            fields = line.split()
            local = fields[2] if len(fields) >= 4 else None
            continue
        if local is None:
            continue
        vals = dict(kv.split(":", 1) for kv in line.split() if kv.startswith("bytes_"))
        with contextlib.suppress(ValueError):
            out[local] = (int(vals.get("bytes_acked", 0)), int(vals.get("bytes_received", 0)))
        local = None
    return out


def socket_bytes(port: int, wrap: Callable[[list[str]], list[str]]) -> SocketBytes:
    """The client sockets to server port `port`, read where the clients run (`wrap`: the
    cell's client namespace, netpath.wrap)."""
    argv = wrap(["ss", "-tinH", "state", "established", "dport", "=", f":{port}"])
    res = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    return parse_ss(res.stdout)


def bytes_between(before: SocketBytes, after: SocketBytes) -> tuple[int, int]:
    """(sent to the server, received from it) by the sockets open at both moments."""
    sent = received = 0
    for key, (acked, got) in after.items():
        if key in before:
            sent += max(0, acked - before[key][0])
            received += max(0, got - before[key][1])
    return sent, received


@dataclass
class StreamClient:
    """One ffmpeg (a publisher or a viewer of one stream)."""

    argv: list[str]
    cpus: list[int] | None
    kind: str  # "publish" or "play"
    user: int
    stream: str
    progress: list[Progress] = field(default_factory=list)
    errors: collections.deque = field(default_factory=lambda: collections.deque(maxlen=40))
    started: float = 0.0
    _popen: subprocess.Popen | None = None
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        cpus = self.cpus

        def pin() -> None:
            if cpus:
                os.sched_setaffinity(0, set(cpus))

        self.started = time.monotonic()
        self._popen = subprocess.Popen(  # noqa: S603 - argv list, never a shell
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own group: stop() kills all of it
            preexec_fn=pin,
            text=True,
            errors="replace",
        )
        self._threads = [
            threading.Thread(target=self._read_progress, daemon=True),
            threading.Thread(target=self._read_errors, daemon=True),
        ]
        for th in self._threads:
            th.start()

    def _read_progress(self) -> None:
        parser = ProgressParser()
        assert self._popen is not None and self._popen.stdout is not None
        for line in self._popen.stdout:
            p = parser.feed(line, time.monotonic())
            if p is not None:
                self.progress.append(p)

    def _read_errors(self) -> None:
        assert self._popen is not None and self._popen.stderr is not None
        for line in self._popen.stderr:
            if line.strip():
                self.errors.append(line.rstrip())

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def poll(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def usage(self) -> Usage | None:
        return read_usage(self._popen.pid) if self._popen else None

    def said(self) -> str:
        return " | ".join(list(self.errors)[-ERROR_LINES:]) or "nothing on stderr"

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM its group (ffmpeg ends its output cleanly), SIGKILL after `timeout`."""
        if self._popen is None:
            return
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._popen.pid, signal.SIGTERM)
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._popen.pid, signal.SIGKILL)
            self._popen.wait()
        for th in self._threads:
            th.join(timeout=2)


def stop_all(clients: list[StreamClient]) -> None:
    """Stop every client: SIGTERM them all at once, then wait for each."""
    for c in clients:
        if c.pid and c.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(c.pid, signal.SIGTERM)
    for c in clients:
        c.stop()


class LocalUsers:
    """The stream clients on this host's client CPUs, on the cell's client path (`wrap`:
    netpath.wrap); serving/remote_streams.py RemoteUsers is the same on a client host."""

    def __init__(self, wrap: Callable[[list[str]], list[str]]) -> None:
        self.wrap = wrap
        self.cpus = sorted(os.sched_getaffinity(0))  # what an unpinned client may use
        self.clients: list[StreamClient] = []

    def start(
        self, argv: list[str], cpus: list[int] | None, kind: str, user: int, stream: str
    ) -> StreamClient:
        """Start one client (FileNotFoundError: its tool is missing here)."""
        c = StreamClient(self.wrap(argv), cpus, kind, user, stream)
        c.start()
        self.clients.append(c)
        return c

    def usages(self, clients: list[StreamClient]) -> dict[int, Usage]:
        return {id(c): u for c in clients if (u := c.usage()) is not None}

    def socket_bytes(self, port: int) -> SocketBytes:
        return socket_bytes(port, self.wrap)

    def check(self) -> None:
        """Nothing to lose here (each client is polled on its own)."""

    def stop(self) -> None:
        stop_all(self.clients)
