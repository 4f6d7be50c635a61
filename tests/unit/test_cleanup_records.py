"""Issue 37 items 3, 7, 8: cleanup acts only on virtbench's own trusted records; state files
get explicit modes; nothing is opened through a planted symlink; stale host run
registrations and JMeter client directories of dead owners are removed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time

import pytest

from virtbench import cleanup, ownedtmp, safefs
from virtbench.drivers import jmeter
from virtbench.platforms import native
from virtbench.runner import locks


@pytest.fixture
def owners(tmp_path, monkeypatch):
    monkeypatch.setattr(cleanup, "OWNERS_DIR", tmp_path / "run/owners")
    return tmp_path / "run/owners"


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_claims_are_root_only_whatever_the_umask(owners):
    old = os.umask(0)
    try:
        cleanup.claim("vb-aaaaaa")
    finally:
        os.umask(old)
    assert stat.S_IMODE((owners / "vb-aaaaaa").stat().st_mode) == 0o600
    assert stat.S_IMODE(owners.stat().st_mode) == 0o700
    assert cleanup.owner("vb-aaaaaa") == cleanup.ALIVE


@pytest.mark.parametrize("how", ["other-owner", "other-writable", "symlink"])
def test_a_claim_that_cannot_be_trusted_is_no_record(owners, tmp_path, how):
    owners.mkdir(parents=True)
    text = f"{_dead_pid()} 1\n"
    claim = owners / "vb-bbbbbb"
    if how == "symlink":
        (tmp_path / "planted").write_text(text)
        claim.symlink_to(tmp_path / "planted")
    else:
        claim.write_text(text)
        if how == "other-owner":
            os.chown(claim, 65534, 65534)
        else:
            claim.chmod(0o666)
    assert cleanup.owner("vb-bbbbbb") == cleanup.NO_RECORD
    claim.unlink()
    claim.write_text(text)
    assert cleanup.owner("vb-bbbbbb") == cleanup.DEAD


def test_native_cleaner_never_kills_on_an_untrusted_state_file(tmp_path, monkeypatch, owners):
    monkeypatch.setattr(native, "STATE_DIR", tmp_path / "native")
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        (tmp_path / "native").mkdir()
        state = {"workdir": None, "groups": [[victim.pid, cleanup.process_start_time(victim.pid)]]}
        planted = tmp_path / "native" / "vb-planted"
        planted.write_text(json.dumps(state))
        os.chown(planted, 65534, 65534)  # written by someone else: not virtbench's record
        lines = native._clean_native()
        time.sleep(0.1)
        assert victim.poll() is None, "killed on a record root did not write"
        assert lines == [
            f"left alone: {planted} (not root's or writable by others) (no virtbench record)"
        ]
    finally:
        victim.kill()
        victim.wait()


def test_native_state_files_are_0600_under_umask_000(tmp_path, monkeypatch, owners):
    monkeypatch.setattr(native, "STATE_DIR", tmp_path / "native")
    p = native.NativePlatform.__new__(native.NativePlatform)
    p.instance, p._workdir, p._groups = "vb-cccccc", tmp_path / "w", []
    old = os.umask(0)
    try:
        p._save_state()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "native/vb-cccccc").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "native").stat().st_mode) == 0o700


def test_a_planted_run_lock_symlink_is_refused_not_truncated(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "results/.locks").mkdir(parents=True)
    (tmp_path / "results/.locks/r1.lock").symlink_to(victim)
    with (
        pytest.raises(safefs.UnsafePath, match="symbolic link"),
        locks.hold_run(tmp_path / "results", "r1"),
    ):
        pass
    assert victim.read_text() == "precious\n"
    assert locks.run_holder(tmp_path / "results", "r1") is None


def test_run_locks_get_explicit_modes_under_umask_000(tmp_path):
    old = os.umask(0)
    try:
        with locks.hold_run(tmp_path / "results", "r2"):
            lock = locks.run_lock_path(tmp_path / "results", "r2")
            assert stat.S_IMODE(lock.stat().st_mode) == 0o644
            assert stat.S_IMODE(lock.parent.stat().st_mode) == 0o755
    finally:
        os.umask(old)


def test_a_stale_host_run_registration_is_removed_a_held_one_kept(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    with locks.hold_host(True, runs):
        (runs / f"{_dead_pid()}.lock").write_text("x\n")  # a killed run's
        lines = locks._clean_stale(runs)
        assert [p.name for p in runs.iterdir()] == [f"{os.getpid()}.lock"]
    assert len(lines) == 1 and lines[0].startswith("removed ")
    assert "host run registrations" in [what for what, _ in cleanup.CLEANERS]


def test_a_killed_jmeter_clients_directory_is_owner_named_and_cleaned(tmp_path):
    base = tmp_path / "private"
    base.mkdir(mode=0o700)
    java = tmp_path / "java"  # stands for JMeter: the shell running it is SIGKILLed
    java.write_text("#!/bin/sh\nkill -9 $PPID\n")
    java.chmod(0o755)
    argv = jmeter.argv("/x.jar", "/plan.jmx", "127.0.0.1", 80, 1, 1, [])
    argv[argv.index("java")] = str(java)
    argv[4] = str(base)
    subprocess.run(argv, capture_output=True, timeout=30)
    left = [p.name for p in base.iterdir()]
    assert len(left) == 1 and ownedtmp.owner_alive(left[0]) is False, left
    lines = ownedtmp.remove_stale(base)
    assert list(base.iterdir()) == [] and len(lines) == 1


def test_the_jmeter_argv_keeps_its_files_out_of_tmp():
    argv = jmeter.argv("/x.jar", "/plan.jmx", "127.0.0.1", 80, 1, 1, [])
    assert "/tmp/vb-jmeter" not in argv[2]
    if os.geteuid() == 0:
        assert argv[4] == str(safefs.PRIVATE_TMP)
        assert stat.S_IMODE(safefs.PRIVATE_TMP.stat().st_mode) == 0o700
