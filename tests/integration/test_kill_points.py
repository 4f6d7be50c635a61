"""Fault injection (issue 16): SIGKILL `virtbench run` at several points of a container cell
and a VM cell. Within a few seconds, without `cleanup`, nothing virtbench started may still
run (the watchdog's job); after `virtbench cleanup` no host object of the run may be left.

Other runs may share this host: the test looks only at the killed run's objects, known by
the owner claims its PID wrote (instance names) and by its process tree.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from virtbench import cleanup

from .test_container_crash import _objects

pytestmark = pytest.mark.integration

SETTLE_S = 10.0  # "within a few seconds": the watchdog measured 4 s on this host

CONTAINER = """
[campaign]
name = "kill-container"
repetitions = 1
warmup = 0
cell_timeout = 120

[[platforms]]
name = "c"
type = "container"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = {duration}
max_prime = 20021  # unusual, so the test knows this run's sysbench
"""

VM = """
[campaign]
name = "kill-vm"
repetitions = 1
warmup = 0
cell_timeout = 120

[[platforms]]
name = "vm"
type = "vm"
accel = "tcg"
vcpus = 1
memory_mb = 384

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 30
max_prime = 20023
"""


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(state, ppid, start time) of a process, None if gone."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f[0], int(f[1]), f[19]


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time of every live process below `root`."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) and st[0] not in "ZX":
            children.setdefault(st[1], []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if (st := _stat(pid)) is not None:
            found[pid] = st[2]
            todo.extend(children.get(pid, []))
    return found


def _claims(pid: int) -> set[str]:
    if not cleanup.OWNERS_DIR.is_dir():
        return set()
    names = set()
    for f in cleanup.OWNERS_DIR.iterdir():
        try:
            if f.read_text().split()[:1] == [str(pid)]:
                names.add(f.name)
        except OSError:
            continue
    return names


def _named_processes(names: set[str], markers: tuple[str, ...]) -> list[str]:
    """Live processes of the run: in a cgroup named after one of its instances, or whose
    command line names an instance or carries one of `markers` (its tools' arguments)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cg = (entry / "cgroup").read_text()
        except OSError:
            continue
        st = _stat(int(entry.name))
        if st is None or st[0] in "ZX":
            continue
        if any(n in cmd or f"/{n}" in cg for n in names) or any(m in cmd for m in markers):
            found.append(f"{entry.name}: {cmd[:100]}")
    return found


def _cell_status(db: Path) -> list[str]:
    try:
        with sqlite3.connect(db, timeout=1) as c:
            return [r[0] for r in c.execute("SELECT status FROM cells ORDER BY seq")]
    except sqlite3.Error:
        return []


def _kill_at(
    tmp_path: Path,
    text: str,
    point: Callable[[subprocess.Popen, set[str], Path], bool],
    markers: tuple[str, ...],
    limit_s: float = 90,
) -> None:
    campaign = tmp_path / "kill.toml"
    campaign.write_text(text)
    results = tmp_path / "results"
    before = _objects()
    run = subprocess.Popen(
        [sys.executable, "-m", "virtbench.cli", "run", str(campaign), "--no-report"]
        + ["--results-dir", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    names: set[str] = set()
    try:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and run.poll() is None:
            names |= _claims(run.pid)
            if point(run, names, results / "virtbench.db"):
                break
            # short: a container's teardown after its last commit can take under 50 ms on a
            # fast host, and a slower poll missed it (the run ended before the kill point)
            time.sleep(0.005)
        assert run.poll() is None, "the run ended before the kill point"
        started = _descendants(run.pid)
        names |= _claims(run.pid)
        created = _objects() - before
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert names, "the run claimed no instance before the kill point"

    # without cleanup: every process it started ends within a few seconds
    deadline = time.monotonic() + SETTLE_S
    while True:
        alive = {p for p, start in started.items() if (s := _stat(p)) and s[2] == start}
        alive = {p for p in alive if _stat(p)[0] not in "ZX"}  # type: ignore[index]
        left = _named_processes(names, markers)
        if (not alive and not left) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not alive, f"processes of the killed run still alive: {sorted(alive)}"
    assert not left, f"processes of the killed run still running: {left}"

    # after cleanup: no host object of the run
    out = subprocess.run(
        [sys.executable, "-m", "virtbench.cli", "cleanup"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    mine = {o for o in (created | _objects()) - before if any(n in o for n in names)}
    assert not mine & _objects(), f"cleanup left: {mine & _objects()}\n{out.stdout}"
    claims = {n for n in names if (cleanup.OWNERS_DIR / n).exists()}
    assert not claims, f"owner claims left: {claims}"


# --- container cell --------------------------------------------------------------------
def test_container_killed_while_provisioning(tmp_path):
    # the instance is claimed as provisioning begins; no cell has started yet
    _kill_at(
        tmp_path,
        CONTAINER.format(duration=5),
        lambda run, names, db: bool(names) and "running" not in _cell_status(db),
        ("cpu-max-prime=20021",),
    )


def test_container_killed_mid_cell(tmp_path):
    def mid_cell(run, names, db):
        return "running" in _cell_status(db) and bool(
            _named_processes(set(), ("cpu-max-prime=20021",))
        )

    _kill_at(tmp_path, CONTAINER.format(duration=20), mid_cell, ("cpu-max-prime=20021",))


def test_container_killed_at_teardown(tmp_path):
    # the only cell is committed: the runner is tearing the container down
    _kill_at(
        tmp_path,
        CONTAINER.format(duration=1),
        lambda run, names, db: _cell_status(db) == ["ok"],
        ("cpu-max-prime=20021",),
    )


# --- VM cell (TCG here: kept short) ----------------------------------------------------
def test_vm_killed_during_boot(tmp_path):
    def booting(run, names, db):
        return bool(names) and bool(_named_processes(names, ()))  # its QEMU is up

    _kill_at(tmp_path, VM, booting, ("cpu-max-prime=20023",))


def test_vm_killed_mid_cell(tmp_path):
    _kill_at(
        tmp_path,
        VM,
        lambda run, names, db: "running" in _cell_status(db),
        ("cpu-max-prime=20023",),
        limit_s=120,
    )
