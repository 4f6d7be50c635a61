"""The `native` platform: the bare host, the baseline every other platform is compared with."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import cleanup, parsing, safefs
from ..cgroups import Cgroup
from ..errors import PlatformError
from ..parsing import ParseError
from . import cpu_weight
from .base import NAME_PREFIX, Accounting, ExecResult, Platform, Process
from .options import OptionReader, PlatformOptions
from .procs import HostProcess, run_host
from .registry import register

# Per-instance record of the workdir and the process groups started, so `virtbench cleanup`
# can kill servers and antagonists and remove the workdir if virtbench itself was killed.
STATE_DIR = Path("/run/virtbench/native")


@dataclass(frozen=True)
class NativeOptions(PlatformOptions):
    workdir: str  # host directory under which the instance's workdir is made
    cpu_quota_us: int | None  # a fixed CPU budget on its vb- cgroup (e.g. a server's)
    cpu_period_us: int | None

    schema = {
        "workdir": ("/var/tmp", None, "directory on the host filesystem for disk tests"),
        "cpu_quota_us": (
            None,
            None,
            "CFS quota of its cgroup per period in µs (50000 = half a CPU)",
        ),
        "cpu_period_us": (None, None, "CFS period in µs (default 100000)"),
    }

    @classmethod
    def read(cls, r: OptionReader) -> dict[str, Any]:
        return {
            "workdir": r.get("workdir", _absolute_path),
            "cpu_quota_us": r.get("cpu_quota_us", lambda v: parsing.integer(v, 1000, 10**9)),
            "cpu_period_us": r.get("cpu_period_us", lambda v: parsing.integer(v, 1000, 10**6)),
        }


WORKDIR_FORMS = "a directory on a disk such as /var/tmp"
# kernel filesystems: a workdir there writes kernel state (or fails), it measures no disk
PSEUDO_FS = frozenset(
    [
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "bpf",
        "configfs",
        "pstore",
        "efivarfs",
        "mqueue",
        "fusectl",
        "binfmt_misc",
        "hugetlbfs",
        "autofs",
        "rpc_pipefs",
        "nsfs",
    ]
)
PSEUDO_DIRS = ("/proc", "/sys", "/dev")


def _absolute_path(value: Any) -> str:
    # absolute: `virtbench cleanup` removes the recorded workdir from wherever it runs
    if not isinstance(value, str) or not os.path.isabs(value):
        raise ParseError(value, "is not an absolute path", WORKDIR_FORMS)
    real = os.path.realpath("/" + value.lstrip("/"))  # `//proc`, `/tmp/../proc`, links
    if any(real == d or real.startswith(d + "/") for d in PSEUDO_DIRS) or (
        _fs_type(real) in PSEUDO_FS
    ):
        raise ParseError(value, "is on a kernel pseudo-filesystem", WORKDIR_FORMS)
    return value


def _fs_type(path: str) -> str | None:
    """The type of the filesystem mounted deepest above `path` (/proc/self/mounts)."""
    best, kind = "", None
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        where = fields[1].replace("\\040", " ")
        inside = path == where or path.startswith(where.rstrip("/") + "/")
        if inside and len(where) >= len(best):
            best, kind = where, fields[2]
    return kind


@register
class NativePlatform(Platform):
    kind = "native"
    description = "the bare host: processes pinned with sched_setaffinity, no isolation layer"
    Options = NativeOptions
    opts: NativeOptions

    @classmethod
    def host_device(cls) -> bool:  # capabilities.HostDevice: nothing between it and the disk
        return True

    @classmethod
    def host_tools(cls) -> bool:  # capabilities.HostTools: its workloads run the host's binaries
        return True

    def provision(self) -> None:
        self._pids: set[int] = set()
        self._procs: list[HostProcess] = []
        self._groups: list[tuple[int, str | None]] = []
        self._workdir = Path(self.opts.workdir) / self.instance
        cleanup.claim(self.instance)
        self._save_state()
        safefs.make_dirs(self._workdir.parent, 0o755)  # explicit: not 0777 under umask 000
        # a fresh directory of ours, never one found there (/var/tmp: anyone can make it)
        os.mkdir(self._workdir, 0o755)
        os.chmod(self._workdir, 0o755)
        self._cgroup = self._make_cgroup()

    def _make_cgroup(self) -> Cgroup | None:
        """Native processes run in a plain vb- cgroup (no limits) beside containers and VMs,
        so every platform competes for the CPU at the same level of the hierarchy and is
        accounted the same way (cgroup CPU time includes all children). Without root or
        cgroups, processes stay where they are and PIDs are accounted instead.

        With RT group scheduling (cgroup v1, CONFIG_RT_GROUP_SCHED) a new cpu group has no
        real-time budget, so SCHED_FIFO probes would fail in it: native processes then stay in
        the root cpu group (keeping the host's budget), and the empty cpu group is removed so
        it does not inflate the virtbench parent's weight against them.

        A `cpu_quota_us` budget (a server given less CPU than its load generator on a small
        host) needs the cpu group, so it is kept then, and failing to set it fails provision.
        Inside a shared CPU budget (`self.budget`, cgroups/budget.py) the group is made in the
        budget's, with no quota of its own: the budget is its quota."""
        budget = self.budget
        quota = self.opts.cpu_quota_us if budget is None else None
        limited = budget is not None or quota is not None  # a group it must run in
        if os.geteuid() != 0:
            if limited:
                raise PlatformError(f"{self.name}: cpu_quota_us needs root (a cgroup quota)")
            return None
        try:
            cg = Cgroup.create(
                self.instance if budget is None else budget.child(self.instance),
                cpu_quota_us=quota,
                cpu_period_us=self.opts.cpu_period_us or (100_000 if quota else None),
            )
        except (PlatformError, OSError) as exc:
            if limited:
                raise PlatformError(f"{self.name}: cannot set cpu_quota_us: {exc}") from exc
            return None
        cpu_dir = cg.paths().get("cpu")
        if not limited and cpu_dir and Path(cpu_dir, "cpu.rt_runtime_us").exists():
            cg.drop_controller("cpu")
        return cg

    def _cgroup_procs(self) -> list[str] | None:
        cg = getattr(self, "_cgroup", None)
        if cg is None:
            return None
        return [f"{d}/cgroup.procs" for d in sorted(set(cg.paths().values()))]

    def teardown(self) -> None:
        for p in getattr(self, "_procs", []):
            p.stop(timeout=2)
        wd = getattr(self, "_workdir", None)
        if wd is not None:
            shutil.rmtree(wd, ignore_errors=True)
        cg = getattr(self, "_cgroup", None)
        if cg is not None:
            cg.destroy()
        (STATE_DIR / self.instance).unlink(missing_ok=True)
        cleanup.release(self.instance)

    def _save_state(self) -> None:
        state = {"workdir": str(self._workdir), "groups": self._groups}
        safefs.write_state(STATE_DIR / self.instance, json.dumps(state))  # 0600, root's

    def _track(self, pid: int) -> None:
        self._groups.append((pid, cleanup.process_start_time(pid)))
        self._save_state()

    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        def track(pid: int) -> None:
            self._pids.add(pid)
            self._track(pid)

        try:
            return run_host(
                argv,
                cpus=cpus,
                timeout=timeout,
                env=env,
                on_start=track,
                cgroup_procs=self._cgroup_procs(),
            )
        finally:
            self._pids.clear()
            self._groups = [g for g in self._groups if g[0] in self._live_pids()]

    def _live_pids(self) -> set[int]:
        return {p.pid for p in self._procs if p.poll() is None and p.pid}

    def spawn(self, argv, *, cpus=None, env=None) -> Process:
        proc = HostProcess(argv, cpus=cpus, env=env, cgroup_procs=self._cgroup_procs())
        self._procs.append(proc)
        if proc.pid:
            self._track(proc.pid)
        return proc

    def endpoint(self, port: int) -> tuple[str, int]:
        return ("127.0.0.1", port)

    def listen_address(self) -> str | None:
        return "127.0.0.1"  # the host's own network: never every address

    def put_file(self, host_path: str, dest: str | None = None, mode: int = 0o755) -> str:
        # the environment is the host: the file is already where it is
        return host_path if dest is None else str(shutil.copy2(host_path, dest))

    @property
    def workdir(self) -> str:
        return str(self._workdir)

    @classmethod
    def host_data_dir(cls, spec) -> str | None:
        return spec.parsed(NativeOptions).workdir

    def accounting(self) -> Accounting:
        pids = set(self._pids) | {p.pid for p in self._procs if p.poll() is None and p.pid}
        cg = getattr(self, "_cgroup", None)
        return Accounting(
            pids=sorted(pids),
            cgroups=cg.paths() if cg is not None else {},
            extra={"host_pid": os.getpid()},
        )

    def labels(self) -> dict:
        return super().labels() | {"cgroup": "vb-group" if self._cgroup_procs() else "none"}

    # --- capabilities (platforms/capabilities.py) -----------------------------------------
    def cpu_weight(self, shares: int) -> AbstractContextManager[str]:
        return cpu_weight.weighted(self, shares, "its own cgroup")


@cleanup.register("native processes and workdirs")
def _clean_native() -> list[str]:
    removed: list[str] = []
    if not STATE_DIR.is_dir():
        return removed
    for state_file in STATE_DIR.glob(NAME_PREFIX + "*"):
        if cleanup.in_use(state_file.name):
            continue  # a live run owns it
        text = safefs.read_state(state_file)
        if text is None:  # not root's, or others could write it: never kill on its word
            removed.append(cleanup.left_alone(f"{state_file} (not root's or writable by others)"))
            continue
        try:
            state = json.loads(text)
        except ValueError:
            state = {"workdir": None, "groups": []}
        for pid, start in state.get("groups", []):
            # the start time guards against killing an unrelated process that reused the PID
            if start is not None and cleanup.process_start_time(pid) == start:
                before = cleanup.processes_in_group(pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                    time.sleep(0.05)  # SIGKILL is delivered at once; let the exits land
                    removed.extend(cleanup.ended(before, state_file.name))
                    removed.append(f"killed process group {pid} of {state_file.name}")
        wd = state.get("workdir")
        if wd and Path(wd).name.startswith(NAME_PREFIX) and Path(wd).exists():
            shutil.rmtree(wd, ignore_errors=True)
            removed.append(f"removed workdir {wd}")
        state_file.unlink(missing_ok=True)
        cleanup.release(state_file.name)
    return removed
