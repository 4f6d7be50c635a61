"""A virtbench process killed with SIGKILL leaves a server behind; `cleanup` removes it."""

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CHILD = textwrap.dedent(
    """
    import sys, time
    from virtbench.platforms.base import PlatformSpec
    from virtbench.platforms.native import NativePlatform
    p = NativePlatform(PlatformSpec("native", "native"), "vb-tst" + sys.argv[1])
    p.provision()
    p.spawn(["sleep", "300"])
    print(p.workdir, flush=True)
    time.sleep(300)
    """
)


def test_cleanup_after_sigkill_removes_processes_and_workdir():
    tag = str(int(time.time()) % 10000)
    child = subprocess.Popen([sys.executable, "-c", CHILD, tag], stdout=subprocess.PIPE, text=True)
    workdir = Path(child.stdout.readline().strip())
    assert workdir.is_dir()
    # a live owner is spared
    subprocess.run(
        [sys.executable, "-m", "virtbench.cli", "cleanup"], check=True, capture_output=True
    )
    assert workdir.is_dir()
    child.kill()
    child.wait()
    sleepers = subprocess.run(["pgrep", "-f", "^sleep 300$"], capture_output=True, text=True)
    assert sleepers.stdout.strip(), "the spawned server should outlive its killed owner"
    out = subprocess.run(
        [sys.executable, "-m", "virtbench.cli", "cleanup"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "removed workdir" in out
    assert not workdir.exists()
    # cleanup signals the process; under load it may take a moment to be gone
    deadline = time.monotonic() + 5
    while True:
        left = subprocess.run(["pgrep", "-f", "^sleep 300$"], capture_output=True, text=True)
        if not left.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left.stdout.strip() == ""
