"""Host process helpers shared by platforms: run argv with pinning, timeout and CPU accounting."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

from .base import ExecResult, Process


def _preexec(cpus: list[int] | None):
    def setup() -> None:
        if cpus:
            os.sched_setaffinity(0, set(cpus))

    return setup


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_host(
    argv: list[str],
    *,
    cpus: list[int] | None = None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    on_start=None,
) -> ExecResult:
    """Run argv on the host; reap it with wait4 so its CPU time (and its children's) is known."""
    full_env = None if env is None else {**os.environ, **env}
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=full_env,
        start_new_session=True,  # its own process group, so a timeout kills all of it
        preexec_fn=_preexec(cpus),
        text=True,
        errors="replace",
    )
    if on_start is not None:
        on_start(proc.pid)
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),
        threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True),
    ]
    for r in readers:
        r.start()
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        _kill_group(proc.pid, signal.SIGTERM)
        time.sleep(2)
        _kill_group(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, on_timeout) if timeout else None
    if timer:
        timer.daemon = True
        timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        _kill_group(proc.pid, signal.SIGKILL)
        raise
    finally:
        if timer:
            timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join(timeout=5)
    return ExecResult(
        argv=list(argv),
        returncode=proc.returncode,
        stdout="".join(out),
        stderr="".join(err),
        elapsed_s=time.monotonic() - start,
        timed_out=timed_out.is_set(),
        cpu_user_s=usage.ru_utime,
        cpu_sys_s=usage.ru_stime,
    )


class HostProcess(Process):
    """A background process on the host in its own process group."""

    def __init__(
        self,
        argv: list[str],
        *,
        cpus: list[int] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self._start = time.monotonic()
        self._popen = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
            start_new_session=True,
            preexec_fn=_preexec(cpus),
            text=True,
            errors="replace",
        )

    @property
    def pid(self) -> int | None:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def stop(self, timeout: float = 5.0) -> ExecResult:
        if self._popen.poll() is None:
            _kill_group(self._popen.pid, signal.SIGTERM)
        try:
            out, err = self._popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self._popen.pid, signal.SIGKILL)
            out, err = self._popen.communicate()
        return ExecResult(
            argv=self.argv,
            returncode=self._popen.returncode,
            stdout=out or "",
            stderr=err or "",
            elapsed_s=time.monotonic() - self._start,
        )
