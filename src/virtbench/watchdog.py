"""A watchdog that outlives a killed virtbench and removes what it left running.

SIGKILL (or a crash of the interpreter) skips every `finally`: a TCG QEMU or a workload
started with `crun exec` would keep loading the host until someone ran `virtbench cleanup`.
The watchdog is a separate process in its own session (terminal signals do not reach it)
holding the read end of a pipe whose write end only virtbench has. A clean exit writes
`done` before closing it; end-of-file without `done` means virtbench died, and the watchdog
runs every cleaner (which spares objects whose owner is still alive, see cleanup.claim).

PR_SET_PDEATHSIG alone would not do: it fires when the parent *thread* exits, and virtbench
starts environments from worker threads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from . import pychild

DONE = b"done\n"


@contextmanager
def guard() -> Iterator[None]:
    """Run the body with a watchdog that cleans up if this process dies inside it."""
    try:
        proc = subprocess.Popen(
            pychild.module_argv("virtbench.watchdog", str(os.getpid())),  # never the cwd's
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        proc = None  # no watchdog is no reason not to measure; cleanup still works by hand
    try:
        yield
    finally:
        if proc is not None and proc.stdin is not None:
            _finish(proc.stdin)
            proc.wait()


def _finish(pipe: IO[bytes]) -> None:
    try:
        pipe.write(DONE)
        pipe.close()
    except OSError:
        pass


def main(argv: list[str]) -> int:
    parent = argv[0] if argv else "?"
    pychild.drop_relative_path_entries()  # the cleaners run tools (ip, nft) by name
    data = sys.stdin.buffer.read()  # returns at end-of-file: the parent exited or died
    if data.endswith(DONE):
        return 0
    from .cleanup_all import run_all

    removed = run_all()
    if removed:
        print(
            f"virtbench watchdog: virtbench (pid {parent}) died; removed what it left:",
            *removed,
            sep="\n  ",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
