"""The stall watchdog (platforms/stall.py): real sh and busybox ash, tiny idle windows."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from virtbench.errors import WorkloadError
from virtbench.platforms import stall
from virtbench.platforms.base import ExecResult

BUSY = ["sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done"]
SHELLS = ["dash"] + (["busybox"] if shutil.which("busybox") else [])


def _run(shell: str, argv: list[str], idle_s: int = 2) -> tuple[ExecResult, float]:
    wrapped = stall.watched(argv, idle_s)
    if shell == "busybox":
        wrapped = ["busybox", *wrapped]
    elif shell == "dash":
        wrapped = ["dash", *wrapped[1:]]
    t = time.monotonic()
    p = subprocess.run(wrapped, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - t
    return ExecResult(wrapped, p.returncode, p.stdout, p.stderr, elapsed), elapsed


@pytest.mark.parametrize("shell", SHELLS)
def test_a_sleeping_tool_is_stopped_within_seconds(shell):
    r, elapsed = _run(shell, ["sleep", "30"])
    assert r.returncode == stall.STALL_EXIT
    assert "no CPU used for 2 s" in stall.stall_reason(r)
    assert elapsed < 8  # 2 s idle + up to 1 s sampling + 2 s TERM grace, not 30 s


@pytest.mark.parametrize("shell", SHELLS)
def test_a_busy_tool_and_exit_codes_pass_through(shell):
    r, _ = _run(shell, BUSY)
    assert r.returncode == 0 and r.stdout.strip() == "done" and stall.stall_reason(r) is None
    r, elapsed = _run(shell, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n")
    assert elapsed < 1.5  # a finished tool is noticed in a fraction of a second


@pytest.mark.parametrize("shell", SHELLS)
def test_cpu_of_children_counts_and_an_idle_tree_is_stopped_whole(shell):
    # the parent waits on a busy child: the child's CPU keeps it alive (a wider window: on a
    # loaded 2-core host a busy child can be starved for a couple of seconds)
    r, _ = _run(shell, ["sh", "-c", BUSY[2] + " & wait"], idle_s=5)
    assert r.returncode == 0 and "done" in r.stdout
    # a busy parent that then waits on a sleeping child: stopped, child too
    r, _ = _run(shell, ["sh", "-c", "sleep 40 & " + BUSY[2] + "; wait"])
    assert r.returncode == stall.STALL_EXIT
    assert not subprocess.run(["pgrep", "-f", "^sleep 40$"], capture_output=True).stdout


def test_check_watched_names_the_stall_and_the_last_output():
    r = ExecResult(["sh"], stall.STALL_EXIT, "", "vb-stall: no CPU used for 10 s; stopped", 12.4)
    with pytest.raises(WorkloadError) as e:
        stall.check_watched(r, "hpcc-linpack", "a\nb\nMPI init\n")
    assert str(e.value) == (
        "hpcc-linpack: stalled after 12s: no CPU used for 10 s; stopped; last output: b | MPI init"
    )
    with pytest.raises(WorkloadError, match="exited 1"):  # not a stall: check()'s words
        stall.check_watched(ExecResult(["hpcc"], 1, "", "boom", 1.0), "hpcc-linpack")
    with pytest.raises(ValueError):
        stall.watched(["x"], 1)
