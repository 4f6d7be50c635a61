"""SIGKILL a `virtbench run` mid-cell on a container campaign, then `virtbench cleanup`:
nothing of that run may remain (process, cgroup, netns, link, nft table, mount, state dir).

Other runs may share this host, so the test compares against what existed before and only
asserts on the objects this run created.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from virtbench import cgroups, cleanup, hostnet
from virtbench.platforms.container.storage import STATE_DIR

pytestmark = pytest.mark.integration

CAMPAIGN = """
[campaign]
name = "crash"
repetitions = 1
warmup = 0
cell_timeout = 120

[[platforms]]
name = "c-nat"
type = "container"
network = "nat"

[suites.network]
test_cases = ["iperf3-tcp"]
duration = 30
"""


def _objects() -> set[str]:
    objs = {f"cgroup {n}" for n in cgroups.leftovers()}
    if hostnet.NETNS_DIR.is_dir():
        objs |= {f"netns {p.name}" for p in hostnet.NETNS_DIR.iterdir()}
    objs |= {f"link {p.name}" for p in Path("/sys/class/net").iterdir() if p.name.startswith("vb-")}
    objs |= {f"nft {t}" for t in hostnet.nft_tables()}
    if STATE_DIR.is_dir():
        objs |= {f"state {p.name}" for p in STATE_DIR.iterdir()}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if str(STATE_DIR) in line.split()[4]:
            objs.add(f"mount {line.split()[4]}")
    return objs


def _processes(names: set[str]) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            text = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cg = (proc / "cgroup").read_text()
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                continue  # dead, waiting for its parent to reap it
        except (OSError, IndexError):
            continue
        if any(n in text or f"/{n}" in cg for n in names):
            found.append(f"{proc.name}: {text[:80]}")
    return found


def _watchdogs(parent: int) -> list[int]:
    """PIDs of the watchdog started by virtbench process `parent`."""
    out = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"virtbench.watchdog" in argv and str(parent).encode() in argv:
            out.append(int(proc.name))
    return out


def test_sigkill_mid_cell_then_cleanup(tmp_path):
    campaign = tmp_path / "crash.toml"
    campaign.write_text(CAMPAIGN)
    before = _objects()
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "virtbench.cli",
            "run",
            str(campaign),
            "--no-report",
            "--results-dir",
            str(tmp_path / "results"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        created: set[str] = set()
        # wait until the cell is under way: the published port's nft table exists
        while time.monotonic() < deadline and run.poll() is None:
            created = _objects() - before
            if any(o.startswith("nft ") for o in created):
                break
            time.sleep(0.2)
        time.sleep(1)
        created = _objects() - before
        assert run.poll() is None, "the run ended before it could be killed"
        # the crash this test models takes the watchdog down too (OOM killer, a killed
        # session): what is left must then be found by `cleanup` alone
        for pid in _watchdogs(run.pid):
            os.kill(pid, signal.SIGKILL)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
    # this run's instances: the owner claims its process wrote (other runs may be active)
    names = {
        f.name for f in cleanup.OWNERS_DIR.iterdir() if f.read_text().split()[:1] == [str(run.pid)]
    }
    assert names, "the run claimed no instance"
    created = {o for o in created if any(n in o for n in names)}
    kinds = {o.split()[0] for o in created}
    assert {"cgroup", "netns", "link", "nft", "state", "mount"} <= kinds, created
    assert _processes(names), "the killed run's container should still be running"

    out = subprocess.run(
        [sys.executable, "-m", "virtbench.cli", "cleanup"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    left = created & _objects()
    assert not left, f"cleanup left: {left}\n{out.stdout}"
    assert not _processes(names)
