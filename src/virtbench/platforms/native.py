"""The `native` platform: the bare host, the baseline every other platform is compared with."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .base import Accounting, ExecResult, Platform, Process
from .procs import HostProcess, run_host
from .registry import register


@register
class NativePlatform(Platform):
    kind = "native"
    description = "the bare host: processes pinned with sched_setaffinity, no isolation layer"
    options_schema = {
        "workdir": ("/var/tmp", None, "directory on the host filesystem for disk tests"),
    }

    def provision(self) -> None:
        self._pids: set[int] = set()
        self._procs: list[HostProcess] = []
        self._workdir = Path(self.options["workdir"]) / self.instance
        self._workdir.mkdir(parents=True, exist_ok=True)

    def teardown(self) -> None:
        for p in getattr(self, "_procs", []):
            p.stop(timeout=2)
        wd = getattr(self, "_workdir", None)
        if wd is not None:
            shutil.rmtree(wd, ignore_errors=True)

    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        def track(pid: int) -> None:
            self._pids.add(pid)

        try:
            return run_host(argv, cpus=cpus, timeout=timeout, env=env, on_start=track)
        finally:
            self._pids.clear()

    def spawn(self, argv, *, cpus=None, env=None) -> Process:
        proc = HostProcess(argv, cpus=cpus, env=env)
        self._procs.append(proc)
        return proc

    def endpoint(self, port: int) -> tuple[str, int]:
        return ("127.0.0.1", port)

    def put_file(self, host_path: str, dest: str | None = None, mode: int = 0o755) -> str:
        # the environment is the host: the file is already where it is
        return host_path if dest is None else str(shutil.copy2(host_path, dest))

    @property
    def workdir(self) -> str:
        return str(self._workdir)

    def accounting(self) -> Accounting:
        pids = set(self._pids) | {p.pid for p in self._procs if p.poll() is None and p.pid}
        return Accounting(pids=sorted(pids), extra={"host_pid": os.getpid()})
