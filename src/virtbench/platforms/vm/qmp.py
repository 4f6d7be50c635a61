"""QEMU Machine Protocol client: vCPU thread ids, host port forwards, quitting."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from .jsonsock import ChannelError, JsonSocket


class QmpError(Exception):
    pass


class Qmp:
    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self.conn = JsonSocket(path, connect_timeout=timeout)
        deadline = time.monotonic() + timeout
        greeting = self.conn.recv(deadline)
        if "QMP" not in greeting:
            raise QmpError(f"unexpected QMP greeting: {greeting}")
        self.version = greeting["QMP"].get("version", {}).get("qemu", {})
        self.command("qmp_capabilities")

    def command(self, name: str, **args: Any) -> Any:
        with self.conn.lock:
            msg: dict[str, Any] = {"execute": name}
            if args:
                msg["arguments"] = args
            self.conn.send(msg)
            deadline = time.monotonic() + self.timeout
            while True:
                reply = self.conn.recv(deadline)
                if "event" in reply:
                    continue  # asynchronous events (RESET, SHUTDOWN...) are not our answer
                if "error" in reply:
                    err = reply["error"]
                    raise QmpError(f"{name}: {err.get('class')}: {err.get('desc')}")
                if "return" in reply:
                    return reply["return"]

    def vcpu_threads(self) -> list[int]:
        """Host thread id of each vCPU, in vCPU index order."""
        cpus = self.command("query-cpus-fast")
        return [c["thread-id"] for c in sorted(cpus, key=lambda c: c["cpu-index"])]

    def hmp(self, line: str) -> str:
        """A human monitor command (hostfwd_add has no QMP equivalent in QEMU 7.2)."""
        return self.command("human-monitor-command", **{"command-line": line})

    def quit(self) -> None:
        with contextlib.suppress(ChannelError, QmpError):  # QEMU closes the socket as it exits
            self.command("quit")

    def close(self) -> None:
        self.conn.close()
