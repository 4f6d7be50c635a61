"""Commands inside a guest through the agent: run to completion, or in the background.

Each command runs under busybox `setsid`, so it leads its own process group inside the guest
and a timeout or stop can signal everything it started (`kill -- -PGID`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..base import ExecResult, Process
from .agent import Agent, AgentError, ExecStatus
from .jsonsock import ChannelError

BUSYBOX = "/run/vb/busybox"  # copied into the guest's /run by the initramfs
GUEST_ENV = "/usr/bin/env"  # coreutils, Essential in every Debian tree
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def guest_env(env: dict[str, str] | None) -> list[str] | None:
    """The agent replaces the whole environment when one is given: keep PATH and HOME."""
    if env is None:
        return None
    return [f"{k}={v}" for k, v in ({"PATH": GUEST_PATH, "HOME": "/root"} | env).items()]


def start(agent: Agent, argv: list[str], env: dict[str, str] | None) -> int:
    # Debian's static busybox prefers its own applets: `setsid sh` would run busybox ash and
    # `setsid ls` busybox ls. env (coreutils) looks argv[0] up in PATH, so the guest runs the
    # same Debian binaries as the host and the containers.
    return agent.exec_start([BUSYBOX, "setsid", GUEST_ENV, "--", *argv], guest_env(env))


def signal_group(agent: Agent, pid: int, sig: str) -> None:
    try:
        gpid = agent.exec_start([BUSYBOX, "kill", f"-{sig}", "--", f"-{pid}"])
        wait(agent, gpid, 10.0)
    except (AgentError, ChannelError):
        pass  # the guest may be going away; the caller reports what it saw


def wait(agent: Agent, pid: int, timeout: float | None) -> ExecStatus | None:
    """Poll guest-exec-status until the command exits (None if `timeout` passes first)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.005
    while True:
        status = agent.exec_status(pid)
        if status.exited:
            return status
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)  # short commands return fast; long ones poll gently


def run(
    agent: Agent, argv: list[str], timeout: float | None, env: dict[str, str] | None
) -> ExecResult:
    t0 = time.monotonic()
    pid = start(agent, argv, env)
    status = wait(agent, pid, timeout)
    timed_out = status is None
    if status is None:
        signal_group(agent, pid, "KILL")
        status = wait(agent, pid, 10.0) or ExecStatus(exited=True, exitcode=None, signal=9)
    return ExecResult(
        argv=list(argv),
        returncode=status.returncode,
        stdout=status.stdout.decode(errors="replace"),
        stderr=status.stderr.decode(errors="replace"),
        elapsed_s=time.monotonic() - t0,
        timed_out=timed_out,
    )


class GuestProcess(Process):
    """A background command in the guest; its output is returned when it is stopped."""

    def __init__(
        self,
        agent: Agent,
        argv: list[str],
        env: dict[str, str] | None,
        on_done: Callable[[GuestProcess], None] = lambda p: None,
    ) -> None:
        self.agent, self.argv = agent, list(argv)
        self._t0 = time.monotonic()
        self.guest_pid = start(agent, argv, env)
        self._final: ExecStatus | None = None
        self._on_done = on_done

    @property
    def pid(self) -> int | None:
        return None  # a guest PID is not a host PID

    def _status(self) -> ExecStatus | None:
        if self._final is None:
            try:
                status = self.agent.exec_status(self.guest_pid)
            except (AgentError, ChannelError):
                status = ExecStatus(exited=True, exitcode=None, signal=9)  # guest gone
            if status.exited:
                self._final = status  # the agent forgets a command once it reported its exit
                self._on_done(self)
        return self._final

    def poll(self) -> int | None:
        status = self._status()
        return None if status is None else status.returncode

    def stop(self, timeout: float = 5.0) -> ExecResult:
        if self._status() is None:
            signal_group(self.agent, self.guest_pid, "TERM")
            deadline = time.monotonic() + timeout
            while self._status() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if self._status() is None:
                signal_group(self.agent, self.guest_pid, "KILL")
                deadline = time.monotonic() + 10
                while self._status() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
        final = self._final or ExecStatus(exited=True, exitcode=None, signal=9)
        return ExecResult(
            argv=self.argv,
            returncode=final.returncode,
            stdout=final.stdout.decode(errors="replace"),
            stderr=final.stderr.decode(errors="replace"),
            elapsed_s=time.monotonic() - self._t0,
        )
