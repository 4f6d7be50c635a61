"""Another tenant's bursts, on demand: random on/off bursts of CPU spinning and memory-bandwidth
load (large memcpy), seeded, in their own process group (optionally their own PID namespace,
an "invisible" tenant), always killed at exit.

Importable by other bench scripts and tests (`with Burst(seed=1, duration=60): ...`) and
runnable:

    python bench/_burst.py --seed 1 --duration 60 [--workers 2] [--kinds cpu,mem]
        [--on 0.5:3] [--off 0.5:3] [--pidns]

A burst picks its kind (cpu or mem) and length from `--on`, then rests for a length from
`--off` (`--off 0:0`: always on). Each burst runs `--workers` forked processes, each spinning
(cpu) or copying a 64 MiB buffer into another (mem: 2x the host's L3, so DRAM). The
generator's controller process is the group leader; its workers die with it (PDEATHSIG),
it dies with whatever started it (PDEATHSIG) or at `--duration`, whichever comes first.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from types import TracebackType

MEM_BYTES = 64 << 20
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Killed when the process that forked us exits, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _span(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition(":")
    a, b = float(lo), float(hi or lo)
    if a < 0 or b < a:
        raise argparse.ArgumentTypeError(f"{text!r}: want LOW:HIGH seconds, 0 <= LOW <= HIGH")
    return a, b


def _work(kind: str) -> None:
    """A worker: spin or copy until killed."""
    _die_with_parent()
    if kind == "cpu":
        x = 0
        while True:
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    src = bytearray(os.urandom(1 << 20)) * (MEM_BYTES >> 20)
    dst = bytearray(MEM_BYTES)
    while True:
        dst[:] = src  # one memcpy of 64 MiB
        src[:] = dst


def _start(kind: str, n: int) -> list[int]:
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                _work(kind)
            finally:
                os._exit(0)
        pids.append(pid)
    return pids


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def controller(
    seed: int,
    duration: float,
    workers: int,
    kinds: list[str],
    on: tuple[float, float],
    off: tuple[float, float],
    log=print,
) -> None:
    """The burst schedule, in this process (it forks the workers): until `duration`."""
    _die_with_parent()
    rng = random.Random(seed)
    end = time.monotonic() + duration
    pids: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while time.monotonic() < end:
            kind, length = rng.choice(kinds), rng.uniform(*on)
            log(f"burst {kind} x{workers} {length:.1f}s")
            pids = _start(kind, workers)
            time.sleep(max(0.0, min(length, end - time.monotonic())))
            _stop(pids)
            pids = []
            rest = rng.uniform(*off)
            if rest > 0:
                time.sleep(max(0.0, min(rest, end - time.monotonic())))
    finally:
        _stop(pids)


class Burst:
    """The generator as a child process group, killed (the whole group) on exit."""

    def __init__(
        self,
        seed: int = 0,
        duration: float = 3600.0,
        workers: int | None = None,
        kinds: str = "cpu,mem",
        on: str = "0.5:3",
        off: str = "0.5:3",
        pidns: bool = False,
    ) -> None:
        argv = [
            sys.executable,
            os.path.abspath(__file__),
            "--seed",
            str(seed),
            "--duration",
            str(duration),
            "--workers",
            str(workers or os.cpu_count() or 1),
            "--kinds",
            kinds,
            "--on",
            on,
            "--off",
            off,
            "--quiet",
        ]
        if pidns:
            unshare = shutil.which("unshare")
            if unshare is None:
                raise RuntimeError("--pidns needs unshare (util-linux)")
            argv = [unshare, "--pid", "--fork", "--mount-proc", *argv]
        self.argv = argv
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Burst:
        self.proc = subprocess.Popen(
            self.argv, start_new_session=True, stdin=subprocess.DEVNULL, cwd="/"
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own group: leader and workers
        self.proc.wait()
        self.proc = None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds, then exit")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--kinds", default="cpu,mem", help="comma list of cpu, mem")
    ap.add_argument("--on", type=_span, default=(0.5, 3.0), help="burst length LOW:HIGH s")
    ap.add_argument("--off", type=_span, default=(0.5, 3.0), help="rest length LOW:HIGH s")
    ap.add_argument("--pidns", action="store_true", help="in a PID namespace of its own")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or any(k not in ("cpu", "mem") for k in kinds):
        ap.error(f"--kinds {args.kinds!r}: allowed cpu, mem")
    if args.pidns:  # run as a group of our own in a new PID namespace, then wait for it
        b = Burst(
            args.seed,
            args.duration,
            args.workers,
            args.kinds,
            f"{args.on[0]}:{args.on[1]}",
            f"{args.off[0]}:{args.off[1]}",
            pidns=True,
        )
        with b:
            assert b.proc is not None
            try:
                return b.proc.wait()
            except KeyboardInterrupt:
                return 130
    log = (lambda *_: None) if args.quiet else (lambda m: print(m, flush=True))
    try:
        controller(args.seed, args.duration, args.workers, kinds, args.on, args.off, log)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
