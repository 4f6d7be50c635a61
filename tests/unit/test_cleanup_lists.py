"""`cleanup` (and the watchdog, which runs the same cleaners) names each process it ended,
with its command, not only the host objects (issue 16 item 8)."""

from __future__ import annotations

import json
import subprocess

from virtbench import cleanup
from virtbench.platforms import native


def test_native_cleaner_lists_the_processes_it_ended(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "STATE_DIR", tmp_path / "native")
    monkeypatch.setattr(cleanup, "OWNERS_DIR", tmp_path / "owners")
    # a leftover workload of a dead run: a process group with a child
    leader = subprocess.Popen(["sh", "-c", "sleep 313 & sleep 314; wait"], start_new_session=True)
    try:
        for _ in range(100):
            if len(cleanup.processes_in_group(leader.pid)) == 3:
                break
            subprocess.run(["sleep", "0.02"])
        (tmp_path / "native").mkdir()
        state = {"workdir": None, "groups": [[leader.pid, cleanup.process_start_time(leader.pid)]]}
        (tmp_path / "native" / "vb-dead01").write_text(json.dumps(state))
        lines = native._clean_native()
    finally:
        leader.kill()
        leader.wait()
    ended = [ln for ln in lines if ln.startswith("ended process")]
    assert any("(sleep 313)" in ln and "vb-dead01" in ln for ln in ended), lines
    assert any("(sleep 314)" in ln for ln in ended), lines
    assert any(ln.startswith(f"ended process {leader.pid} (sh -c") for ln in ended), lines


def test_ended_names_only_processes_that_are_gone():
    alive = subprocess.Popen(["sleep", "30"])
    try:
        before = {alive.pid: "sleep 30", 2**22 + 7: "gone --flag"}
        assert cleanup.ended(before, "cgroup vb-x") == [
            f"ended process {2**22 + 7} (gone --flag) of cgroup vb-x"
        ]
    finally:
        alive.kill()
        alive.wait()
