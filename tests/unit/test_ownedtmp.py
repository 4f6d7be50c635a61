"""Private temporary copies (a read-only store's migrated copy, an import's copy) are named by
their owner's PID and start time: `virtbench cleanup` removes those a SIGKILL or a crash left,
and never one a live process still reads (a `report` beside a campaign)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import virtbench
from virtbench import cleanup, ownedtmp
from virtbench.store import importer, readonly
from virtbench.store.db import DB_NAME, Store

from .fakes import dead_pid

GOLDEN_V1 = Path(__file__).parents[1] / "data" / "runs" / "v1" / DB_NAME  # an older schema
SRC = Path(virtbench.__file__).parents[1]


@pytest.fixture
def tmpdir_is(tmp_path, monkeypatch) -> Path:
    """tempfile's directory (where the copies go and cleanup looks) is tmp_path/tmp."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_only_copies_of_dead_owners_are_removed(tmpdir_is):
    pid, start = dead_pid()
    me, my_start = os.getpid(), ownedtmp.process_start_time(os.getpid())
    stale = [
        tmpdir_is / f"vb-store-{pid}-{start}-abcd1234",  # its process died
        tmpdir_is / f"vb-import-{me}-{int(my_start) + 1}-abcd_234",  # our PID, reused
        tmpdir_is / f"vb-wrk-{pid}-{start}-x1y2z3w4.lua",  # a file
        tmpdir_is / f"vb-runsc-probe-{pid}-{start}-abcdefgh",  # a kind of two words
    ]
    live = ownedtmp.tempdir("store")  # this process's, in use
    kept = [
        Path(live.name),
        tmpdir_is / "vb-jmeter-a1b2c3",  # not owner-named: its own cleaner's
        tmpdir_is / f"vb-store-{pid}-{start}",  # not tempfile's name
        tmpdir_is / "unrelated",
    ]
    for p in stale + kept[1:]:
        if p.suffix:
            p.write_text("x")
        else:
            p.mkdir()
            (p / DB_NAME).write_bytes(b"\0" * 4096)
    try:
        removed = ownedtmp.remove_stale()
        assert sorted(removed) == sorted(
            f"removed {p} (its process {p.name.split('-')[-3]} is gone)" for p in stale
        )
        assert [p for p in stale if p.exists()] == []
        assert [p for p in kept if not p.exists()] == []
        assert (Path(live.name)).is_dir()
    finally:
        live.cleanup()


def test_unknown_start_time_spares_a_live_pid(tmpdir_is):
    pid, _ = dead_pid()
    alive = tmpdir_is / f"vb-store-{os.getpid()}-0-abcdefgh"
    dead = tmpdir_is / f"vb-store-{pid}-0-abcdefgh"
    alive.mkdir()
    dead.mkdir()
    ownedtmp.remove_stale()
    assert alive.exists() and not dead.exists()


def test_cleanup_runs_the_rule():
    assert "private temporary files" in [what for what, _ in cleanup.CLEANERS]


def _placed_v1(d: Path) -> Path:
    d.mkdir(exist_ok=True)
    shutil.copyfile(GOLDEN_V1, d / DB_NAME)
    return d / DB_NAME


def test_a_killed_readers_store_copy_goes_a_live_ones_stays(tmp_path, tmpdir_is):
    """A `report` SIGKILLed while reading an older store through its migrated copy leaves
    the copy; cleanup removes it, and spares the copy of a reader still running."""
    db = _placed_v1(tmp_path / "results")
    child = (
        "import os, signal\n"
        "from virtbench.store.db import Store\n"
        f"st = Store({str(db)!r}, read_only=True)\n"
        "print(st._private.name, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC), TMPDIR=str(tmpdir_is))
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env)
    assert r.returncode == -signal.SIGKILL, r.stderr
    left = Path(r.stdout.strip())
    assert left.parent == tmpdir_is and left.name.startswith("vb-store-")
    assert (left / DB_NAME).stat().st_size > 0  # the SIGKILL skipped its removal
    live = Store(db, read_only=True)  # a reader still running beside the cleanup
    try:
        assert live._private is not None and live.read_note
        mine = Path(live._private.name)
        removed = cleanup._clean_owned_tmp()
        assert removed == [f"removed {left} (its process {left.name.split('-')[2]} is gone)"]
        assert not left.exists()
        assert (mine / DB_NAME).is_file()
        assert live.runs()  # still readable
    finally:
        live.close()
    assert not mine.exists()  # close removes it as before


def test_import_copy_is_named_by_its_owner(tmp_path, tmpdir_is, monkeypatch):
    src = _placed_v1(tmp_path / "src")
    seen: list[Path] = []
    real = readonly.private_copy

    def spy(path: Path, into: Path, name: str = DB_NAME) -> Path:
        seen.append(Path(into))
        assert ownedtmp.owner_alive(Path(into).name) is True  # spared while importing
        return real(path, into, name)

    monkeypatch.setattr(readonly, "private_copy", spy)
    dst = Store(tmp_path / "dst" / DB_NAME)
    try:
        done = importer.import_file(src, dst, lambda line: None)
    finally:
        dst.close()
    assert done and [p.parent for p in seen] == [tmpdir_is]
    assert seen[0].name.startswith(f"vb-import-{os.getpid()}-")
    assert not seen[0].exists()


def test_jmeter_dirs_go_by_their_owner_never_by_name_or_age(tmpdir_is):
    """A vb-jmeter-… directory not named by an owner (a user's, or an older version's) is
    not virtbench's to remove however old; an owner-named one goes once its owner is gone
    (issue 37: cleanup removes only what its records say it made)."""
    from virtbench import cleanup

    live = Path(ownedtmp.mkdtemp("jmeter"))
    other = tmpdir_is / "vb-jmeter-Ab12Cd"  # mktemp -d /tmp/vb-jmeter-XXXXXX
    other.mkdir()
    old = 3 * 3600
    for d in (live, other):
        os.utime(d, (os.path.getatime(d) - old, os.path.getmtime(d) - old))
    assert cleanup._clean_owned_tmp() == []
    assert live.is_dir() and other.is_dir()
    shutil.rmtree(live)
