"""One running QEMU process: start it, wait for the guest agent, pin vCPUs, shut it down.

Boot time is measured from just before QEMU is started to the agent's first answer; shutdown
time from the guest's poweroff request to the QEMU process having exited.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ...errors import PlatformError
from . import paths, qemu
from .agent import Agent, AgentError
from .guest import BUSYBOX
from .jsonsock import ChannelError
from .qmp import Qmp, QmpError

SERIAL_TAIL_LINES = 15


class Machine:
    def __init__(self, cfg: qemu.VmConfig) -> None:
        self.cfg = cfg
        self.proc: subprocess.Popen | None = None
        self.qmp: Qmp | None = None
        self.agent = Agent(cfg.agent_socket)
        self.vcpu_threads: list[int] = []
        self.timings: dict[str, float] = {}
        self.kept_serial_log: Path | None = None

    # --- start --------------------------------------------------------------------------
    def start(self, boot_timeout: float, on_pid: Callable[[int], None] = lambda pid: None) -> None:
        argv = qemu.argv(self.cfg)
        log = open(self.cfg.run_dir / "qemu.log", "wb")  # noqa: SIM115 - owned by the process
        t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us, and we stop QEMU in order
            )
        finally:
            log.close()
        on_pid(self.proc.pid)  # e.g. move it into its cgroup before the guest runs much
        deadline = t0 + boot_timeout
        try:
            self.qmp = Qmp(self.cfg.qmp_socket, timeout=max(1.0, min(30.0, deadline - t0)))
            self.timings["qmp_s"] = time.monotonic() - t0
            self.vcpu_threads = self.qmp.vcpu_threads()
            self.agent.wait_ready(deadline, alive=self.alive)
        except (ChannelError, QmpError, AgentError) as exc:
            raise PlatformError(self._boot_failure(str(exc), boot_timeout)) from exc
        self.timings["boot_s"] = time.monotonic() - t0

    def _boot_failure(self, why: str, boot_timeout: float) -> str:
        """A message with the QEMU error and the serial log's tail; the log is kept on disk."""
        parts = [f"guest {self.cfg.name} did not become ready within {boot_timeout:.0f} s: {why}"]
        if self.proc is not None and self.proc.poll() is not None:
            qlog = _tail(self.cfg.run_dir / "qemu.log", 5)
            parts.append(f"QEMU exited with status {self.proc.returncode}: {qlog or '(no output)'}")
        serial = self.keep_serial_log()
        if serial is not None:
            parts.append(
                f"serial log kept at {serial}; last lines: {_tail(serial, SERIAL_TAIL_LINES)}"
            )
        return "; ".join(parts)

    def keep_serial_log(self) -> Path | None:
        src = self.cfg.serial_log
        if not src.exists():
            return None
        dest_dir = paths.log_dir()
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / f"{self.cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}-serial.log"
        shutil.copyfile(src, dest)
        self.kept_serial_log = dest
        return dest

    # --- state --------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def threads(self) -> dict[int, str]:
        return qemu.thread_names(self.pid) if self.alive() and self.pid else {}

    def pin_vcpus(self, cpus: list[int] | None) -> None:
        """vCPU i runs on host CPU cpus[i % len]; None lets them float on all allowed CPUs."""
        allowed = sorted(os.sched_getaffinity(0))
        for i, tid in enumerate(self.vcpu_threads):
            target = {cpus[i % len(cpus)]} if cpus else set(allowed)
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(tid, target)

    def pin_emulator(self, cpus: list[int] | None) -> None:
        """QEMU's threads other than the vCPUs (main loop, back ends, I/O) on host CPUs `cpus`;
        None leaves them floating. Threads QEMU makes later inherit the main thread's."""
        if not cpus or self.proc is None:
            return
        vcpus = set(self.vcpu_threads)
        for task in Path(f"/proc/{self.proc.pid}/task").glob("[0-9]*"):
            if int(task.name) not in vcpus:
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(int(task.name), set(cpus))

    # --- stop ---------------------------------------------------------------------------
    def shutdown(self, timeout: float = 30.0) -> float:
        """Graceful guest poweroff through the agent; returns seconds until QEMU exited."""
        if not self.alive():
            raise PlatformError(f"guest {self.cfg.name} is not running")
        t0 = time.monotonic()
        try:
            self.agent.exec_start([BUSYBOX, "poweroff"])
        except (AgentError, ChannelError) as exc:
            raise PlatformError(f"guest {self.cfg.name}: poweroff request failed: {exc}") from exc
        assert self.proc is not None
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise PlatformError(
                f"guest {self.cfg.name} did not power off within {timeout:.0f} s"
            ) from exc
        took = time.monotonic() - t0
        self.timings["shutdown_s"] = took
        return took

    def stop(self) -> None:
        """Stop QEMU now (idempotent): QMP quit, then SIGKILL; close the channels."""
        self.agent.close()
        if self.alive():
            assert self.proc is not None
            if self.qmp is not None:
                self.qmp.quit()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.qmp is not None:
            self.qmp.close()
            self.qmp = None


def _tail(path: Path, n: int) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in lines[-n:])
