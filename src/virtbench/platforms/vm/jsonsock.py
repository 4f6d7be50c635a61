"""A line-oriented JSON connection over a unix socket, shared by the QMP and agent clients."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any


class ChannelError(Exception):
    """The socket closed, timed out or returned garbage (QEMU or the guest went away)."""


class JsonSocket:
    def __init__(self, path: Path, connect_timeout: float = 10.0) -> None:
        self.path = path
        self._buf = b""
        self.lock = threading.Lock()  # one request/response exchange at a time
        deadline = time.monotonic() + connect_timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(path))
                break
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                sock.close()
                if time.monotonic() > deadline:
                    raise ChannelError(f"cannot connect to {path}: {exc}") from exc
                time.sleep(0.02)
        self.sock = sock

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def send(self, obj: dict[str, Any]) -> None:
        try:
            self.sock.sendall(json.dumps(obj).encode() + b"\n")
        except OSError as exc:
            raise ChannelError(f"{self.path}: send failed: {exc}") from exc

    def send_raw(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise ChannelError(f"{self.path}: send failed: {exc}") from exc

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ChannelError(f"{self.path}: no answer in time")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError as exc:
            raise ChannelError(f"{self.path}: no answer in time") from exc
        except OSError as exc:
            raise ChannelError(f"{self.path}: receive failed: {exc}") from exc
        if not chunk:
            raise ChannelError(f"{self.path}: connection closed")
        self._buf += chunk

    def discard_until(self, marker: bytes, deadline: float) -> None:
        """Drop everything up to and including `marker` (the agent's 0xff sync delimiter)."""
        while marker not in self._buf:
            self._buf = b""
            self._fill(deadline)
        self._buf = self._buf.split(marker, 1)[1]

    def recv(self, deadline: float) -> dict[str, Any]:
        """Next JSON object (one per line)."""
        while True:
            line, sep, rest = self._buf.partition(b"\n")
            if sep:
                self._buf = rest
                line = line.strip().lstrip(b"\xff")
                if not line:
                    continue
                try:
                    return json.loads(line)
                except ValueError as exc:
                    raise ChannelError(f"{self.path}: not JSON: {line[:200]!r}") from exc
            self._fill(deadline)
