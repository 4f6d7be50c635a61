"""Host process helpers shared by platforms: run argv with pinning, timeout and CPU accounting."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time

from ..errors import WorkloadError
from .base import NOT_FOUND, ExecResult, Process, not_found


def _path(env: dict[str, str] | None) -> str:
    """The PATH a command was looked up in."""
    return (os.environ if env is None else env).get("PATH", os.defpath)


def _preexec(cpus: list[int] | None, cgroup_procs: list[str] | None = None):
    def setup() -> None:
        # join the cgroups before exec, so no child can escape accounting by forking early
        for path in cgroup_procs or ():
            with open(path, "w") as f:
                f.write(str(os.getpid()))
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
    cgroup_procs: list[str] | None = None,
) -> ExecResult:
    """Run argv on the host; reap it with wait4 so its CPU time (and its children's) is known."""
    full_env = None if env is None else {**os.environ, **env}
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=full_env,
            start_new_session=True,  # its own process group, so a timeout kills all of it
            preexec_fn=_preexec(cpus, cgroup_procs),
            text=True,
            errors="replace",
        )
    except FileNotFoundError as exc:
        # what a shell or a container runtime's exec says: exit 127, so check() words it
        return ExecResult(
            argv=list(argv),
            returncode=NOT_FOUND,
            stdout="",
            stderr=f"{argv[0]}: {exc.strerror} (PATH={_path(full_env)})",
            elapsed_s=time.monotonic() - start,
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
    """A background process on the host in its own process group.

    Its output goes to unlinked temporary files, not pipes: a chatty server must never block
    on a full pipe that nobody reads while the measurement runs.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        cpus: list[int] | None = None,
        env: dict[str, str] | None = None,
        cgroup_procs: list[str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self._start = time.monotonic()
        # closed in stop(); they outlive this method by design
        self._out = tempfile.TemporaryFile(mode="w+", errors="replace")  # noqa: SIM115
        self._err = tempfile.TemporaryFile(mode="w+", errors="replace")  # noqa: SIM115
        full_env = None if env is None else {**os.environ, **env}
        try:
            self._popen = subprocess.Popen(
                argv,
                stdout=self._out,
                stderr=self._err,
                stdin=subprocess.DEVNULL,
                env=full_env,
                start_new_session=True,
                preexec_fn=_preexec(cpus, cgroup_procs),
            )
        except FileNotFoundError as exc:
            self._out.close()
            self._err.close()
            raise WorkloadError(
                f"{argv[0]}: {exc.strerror} (PATH={_path(full_env)})"
                + not_found(argv[0], NOT_FOUND)
            ) from exc

    @property
    def pid(self) -> int | None:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def stop(self, timeout: float = 5.0) -> ExecResult:
        if self._popen.poll() is None:
            _kill_group(self._popen.pid, signal.SIGTERM)
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self._popen.pid, signal.SIGKILL)
            self._popen.wait()
        out, err = self._read(self._out), self._read(self._err)
        return ExecResult(
            argv=self.argv,
            returncode=self._popen.returncode,
            stdout=out,
            stderr=err,
            elapsed_s=time.monotonic() - self._start,
        )

    @staticmethod
    def _read(f) -> str:
        if f.closed:
            return ""
        f.seek(0)
        text = f.read()
        f.close()
        return text
