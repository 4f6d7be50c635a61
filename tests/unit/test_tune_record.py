"""Issue 37 item 5: `cleanup` restores only known knobs, only after a `tune` that died part
way, and believes only a root-only record."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest

from virtbench import tune
from virtbench.errors import VirtbenchError

from .test_tune import _host

GOV = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _record(state, changes, pid, complete, start="1"):
    state.parent.mkdir(parents=True, exist_ok=True)
    body = {"pid": pid, "start": start, "complete": complete, "changes": changes}
    state.write_text(json.dumps(body))
    state.chmod(0o600)


def test_a_finished_tune_survives_cleanup_and_its_record_is_root_only(tmp_path):
    root, state = tmp_path / "root", tmp_path / "run/tune.json"
    _host(root)
    old = os.umask(0)
    try:
        tune.apply(root, state=state)
    finally:
        os.umask(old)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    assert tune._restore_after_crash(root, state) == []  # the user asked for it: kept
    assert (root / GOV.lstrip("/")).read_text().strip() == "performance"
    assert state.exists()


def test_a_tune_that_died_part_way_is_undone_by_cleanup(tmp_path):
    root, state = tmp_path / "root", tmp_path / "run/tune.json"
    _host(root)
    (root / GOV.lstrip("/")).write_text("performance\n")
    change = {"knob": "governor", "path": GOV, "old": "schedutil", "new": "performance"}
    _record(state, [change], os.getpid(), False, tune.ownedtmp.process_start_time(os.getpid()))
    assert tune._restore_after_crash(root, state) == []  # its process still runs
    _record(state, [change], _dead_pid(), False)
    lines = tune._restore_after_crash(root, state)
    assert lines == [f"restored {GOV}: performance -> schedutil"]
    assert (root / GOV.lstrip("/")).read_text().strip() == "schedutil"


def test_a_record_naming_another_file_is_not_written(tmp_path):
    root, state = tmp_path / "root", tmp_path / "run/tune.json"
    _host(root)
    (root / "etc").mkdir()
    victim = root / "etc/shadow"
    victim.write_text("root:secret\n")
    evil = {"knob": "governor", "path": "/etc/shadow", "old": "owned", "new": "x"}
    sneaky = {"knob": "irq", "path": "/proc/irq/../../etc/shadow", "old": "owned", "new": "x"}
    _record(state, [evil, sneaky], _dead_pid(), False)
    lines = tune._restore_after_crash(root, state)
    assert all(ln.startswith("could not restore") for ln in lines) and len(lines) == 2
    assert victim.read_text() == "root:secret\n"


@pytest.mark.parametrize("how", ["other-owner", "group-writable", "symlink"])
def test_an_untrusted_record_is_not_believed(tmp_path, how):
    root, state = tmp_path / "root", tmp_path / "run/tune.json"
    _host(root)
    change = {"knob": "governor", "path": GOV, "old": "powersave", "new": "performance"}
    if how == "symlink":
        real = tmp_path / "elsewhere.json"
        _record(real, [change], _dead_pid(), False)
        state.parent.mkdir(parents=True)
        state.symlink_to(real)
    else:
        _record(state, [change], _dead_pid(), False)
        if how == "other-owner":
            os.chown(state, 65534, 65534)
        else:
            state.chmod(0o620)
    lines = tune._restore_after_crash(root, state)
    assert len(lines) == 1 and lines[0].startswith("left alone:"), lines
    assert (root / GOV.lstrip("/")).read_text().strip() == "schedutil"
    with pytest.raises(VirtbenchError, match="not virtbench's record"):
        tune.reset(root, state)
