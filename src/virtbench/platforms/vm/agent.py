"""qemu-guest-agent client over the virtio-serial channel: readiness, exec, exec-status.

This is the only way virtbench controls a guest (no console scraping). Every exchange starts
from a `guest-sync-delimited` handshake when the connection is new, so answers to requests
queued while the guest was still booting are discarded instead of mistaken for ours.
"""

from __future__ import annotations

import base64
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .jsonsock import ChannelError, JsonSocket


class AgentError(Exception):
    pass


@dataclass
class ExecStatus:
    exited: bool
    exitcode: int | None = None
    signal: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    truncated: bool = False

    @classmethod
    def from_reply(cls, r: dict[str, Any]) -> ExecStatus:
        return cls(
            exited=bool(r.get("exited")),
            exitcode=r.get("exitcode"),
            signal=r.get("signal"),
            stdout=base64.b64decode(r.get("out-data", "")),
            stderr=base64.b64decode(r.get("err-data", "")),
            truncated=bool(r.get("out-truncated") or r.get("err-truncated")),
        )

    @property
    def returncode(self) -> int:
        """Shell-style: the exit code, or 128+signal when killed."""
        if self.signal is not None:
            return 128 + self.signal
        return self.exitcode if self.exitcode is not None else -1


class Agent:
    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.conn: JsonSocket | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def wait_ready(self, deadline: float, alive=lambda: True) -> None:
        """Block until the agent answers a sync (the guest is booted and in control)."""
        last = "no answer"
        while time.monotonic() < deadline:
            if not alive():
                raise AgentError("QEMU exited before the guest agent answered")
            try:
                self._connect(min(deadline, time.monotonic() + 1.0))
                self.command("guest-ping")
                return
            except ChannelError as exc:
                last = str(exc)
                self.close()
        raise AgentError(f"guest agent not ready in time ({last})")

    def _connect(self, deadline: float) -> None:
        if self.conn is not None:
            return
        conn = JsonSocket(self.path, connect_timeout=max(0.1, deadline - time.monotonic()))
        try:
            sync_id = random.randrange(1, 2**31)
            conn.send_raw(b"\xff")  # resets the agent's JSON parser after partial input
            conn.send({"execute": "guest-sync-delimited", "arguments": {"id": sync_id}})
            while True:
                conn.discard_until(b"\xff", deadline)
                reply = conn.recv(deadline)
                if reply.get("return") == sync_id:
                    break
        except BaseException:
            conn.close()
            raise
        self.conn = conn

    def command(self, name: str, timeout: float | None = None, **args: Any) -> Any:
        if self.conn is None:
            self._connect(time.monotonic() + (timeout or self.timeout))
        assert self.conn is not None
        with self.conn.lock:
            msg: dict[str, Any] = {"execute": name}
            if args:
                msg["arguments"] = args
            self.conn.send(msg)
            reply = self.conn.recv(time.monotonic() + (timeout or self.timeout))
        if "error" in reply:
            err = reply["error"]
            raise AgentError(f"{name}: {err.get('class')}: {err.get('desc')}")
        return reply.get("return")

    def exec_start(self, argv: list[str], env: list[str] | None = None) -> int:
        args: dict[str, Any] = {"path": argv[0], "arg": argv[1:], "capture-output": True}
        if env is not None:
            args["env"] = env
        return int(self.command("guest-exec", **args)["pid"])

    def exec_status(self, pid: int) -> ExecStatus:
        return ExecStatus.from_reply(self.command("guest-exec-status", pid=pid))
