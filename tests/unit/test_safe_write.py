"""Issue 37 item 1: a user-named or results-dir file written by temp+rename never replaces
(or writes through) a device, fifo, directory or symlink; every writer goes through
safefs.write_file."""

from __future__ import annotations

import os
import stat

import pytest

from virtbench import safefs
from virtbench.report import build, compare_page


def _targets(tmp_path):
    """name -> a path that exists and is not a regular file (kept to check it survived)."""
    chr_dev = tmp_path / "null"
    os.mknod(chr_dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    d = tmp_path / "dir.html"
    d.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "link.html"
    link.symlink_to(victim)
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "would-be-created")
    return {"chr": chr_dev, "fifo": fifo, "dir": d, "link": link, "dangling": dangling}


@pytest.mark.parametrize("kind", ["chr", "fifo", "dir", "link", "dangling"])
def test_report_output_refuses_what_is_not_a_regular_file(tmp_path, kind):
    targets = _targets(tmp_path)
    before = {k: os.lstat(p).st_mode for k, p in targets.items()}
    with pytest.raises(safefs.UnsafePath, match="not a regular file|is a"):
        build.write(None, "r1", tmp_path, output=targets[kind])  # refused before rendering
    assert {k: os.lstat(p).st_mode for k, p in targets.items()} == before
    assert (tmp_path / "victim").read_text() == "precious\n"
    assert not (tmp_path / "would-be-created").exists()


@pytest.mark.parametrize("kind", ["chr", "fifo", "dir", "link", "dangling"])
def test_compare_html_refuses_what_is_not_a_regular_file(tmp_path, kind, monkeypatch):
    targets = _targets(tmp_path)
    before = {k: os.lstat(p).st_mode for k, p in targets.items()}
    monkeypatch.setattr(compare_page, "html", lambda doc: "<p>page</p>")
    with pytest.raises(safefs.UnsafePath):
        compare_page.write_html(None, targets[kind])
    assert {k: os.lstat(p).st_mode for k, p in targets.items()} == before
    assert (tmp_path / "victim").read_text() == "precious\n"
    assert not (tmp_path / "would-be-created").exists()


def test_write_file_replaces_a_regular_file_with_explicit_mode_under_umask_000(tmp_path):
    target = tmp_path / "r.html"
    target.write_text("old")
    old = os.umask(0)
    try:
        safefs.write_file(target, "new", mode=0o644, kind="report")
        made = safefs.make_dirs(tmp_path / "a" / "b", 0o755)
    finally:
        os.umask(old)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert stat.S_IMODE(made.stat().st_mode) == 0o755
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_writer_refuses_a_directory_others_can_write_that_is_not_sticky(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(safefs.UnsafePath, match="writable by other users"):
        safefs.write_file(shared / "x.html", "x")
    assert list(shared.iterdir()) == []
    shared.chmod(0o1777)  # sticky, as /tmp: each owner's names are protected
    safefs.write_file(shared / "x.html", "x")
    assert (shared / "x.html").read_text() == "x"


def test_no_writer_renames_or_opens_for_writing_outside_safefs():
    """The class, not the instance: temp+rename and plain writes into user-named or
    results-dir paths live in safefs only (a grep over the sources of those writers)."""
    from pathlib import Path

    import virtbench

    src = Path(virtbench.__file__).parent
    for rel in ("report/build.py", "report/compare_page.py", "tune.py", "fleet/state.py"):
        text = (src / rel).read_text()
        assert "os.replace(" not in text and ".replace(self.dir" not in text, rel
        assert ".write_text(" not in text, rel
