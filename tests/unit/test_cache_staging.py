"""Staging directories in the build caches (`cachedir.building`, the java fetch, the gVisor
shim) and a report's temporary file are named by their owner process: `virtbench cleanup`
(and the watchdog) removes those a SIGKILL or a crash left, never a concurrent build's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import virtbench
from virtbench import cachedir, cleanup, ownedtmp, safefs, tools
from virtbench.errors import VirtbenchError

from .fakes import dead_pid

SRC = Path(virtbench.__file__).parents[1]
ENVS = {
    "appstack": "VIRTBENCH_APPSTACK_DIR",
    "java": "VIRTBENCH_JAVA_DIR",
    "probes": "VIRTBENCH_PROBES_DIR",
    "wasm": "VIRTBENCH_WASM_DIR",
}


@pytest.fixture
def roots(tmp_path, monkeypatch) -> dict[str, Path]:
    """Every cache root moved under tmp_path, as a test or CI does with the variables."""
    found = {}
    for kind, env in ENVS.items():
        found[kind] = tmp_path / "cache" / kind
        found[kind].mkdir(parents=True)
        monkeypatch.setenv(env, str(found[kind]))
    return found


def test_every_cache_kind_is_known_to_the_cleaner(roots):
    assert {kind: cachedir.cache_root(kind) for kind in ENVS} == roots
    assert "cache staging directories" in [what for what, _ in cleanup.CLEANERS]


def test_a_dead_builds_staging_dir_goes_a_live_one_stays(roots):
    pid, start = dead_pid()
    stale = [
        roots["wasm"] / f".vb-build-{pid}-{start}-abcd1234",
        roots["java"] / f".vb-fetch-{pid}-{start}-abcd_234",
        roots["probes"] / f".vb-build-{pid}-{start}-x1y2z3w4",
    ]
    kept = [
        roots["appstack"] / "0123456789abcdef",  # a finished build
        roots["java"] / "m2",
        roots["java"] / f"vb-store-{pid}-{start}-abcd1234",  # not a staging kind
        roots["wasm"] / ".build-abcd1234",  # an older version's: no owner to ask
    ]
    for p in stale + kept:
        p.mkdir()
        (p / "half.o").write_bytes(b"\0" * 64)
    final = roots["probes"] / "fedcba9876543210"
    with cachedir.building(final, lambda d: True) as live:  # this process's build, running
        (live / "vb-cyclictest").write_text("x")
        removed = dict(cleanup.CLEANERS)["cache staging directories"]()
        assert sorted(removed) == sorted(f"removed {p} (its process {pid} is gone)" for p in stale)
        assert [p for p in stale if p.exists()] == []
        assert [p for p in kept if not p.exists()] == []
        assert (live / "vb-cyclictest").is_file()
    assert (final / "vb-cyclictest").is_file()


def test_building_names_its_staging_dir_after_its_owner(tmp_path):
    final = tmp_path / "cache" / "abc"
    with cachedir.building(final, lambda d: True) as tmp:
        assert tmp.parent == final.parent
        assert tmp.name.startswith(f".vb-build-{os.getpid()}-")
        assert ownedtmp.owner_alive(tmp.name) is True
    assert [p.name for p in final.parent.iterdir()] == ["abc"]


def test_a_sigkilled_build_leaves_a_dir_cleanup_removes(roots):
    child = (
        "import os, signal\n"
        "from pathlib import Path\n"
        "from virtbench import cachedir\n"
        "with cachedir.building(cachedir.cache_root('wasm') / 'h', lambda d: False) as t:\n"
        "    print(t, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env)
    assert r.returncode == -signal.SIGKILL, r.stderr
    left = Path(r.stdout.strip())
    assert left.parent == roots["wasm"] and left.is_dir()
    assert cachedir.remove_stale() == [
        f"removed {left} (its process {left.name.split('-')[2]} is gone)"
    ]
    assert not left.exists()


def test_java_fetch_stages_in_an_owner_named_dir(roots, monkeypatch):
    from virtbench.java import cache

    seen: list[Path] = []

    def mvn(argv, cwd, **kw):
        seen.append(Path(cwd))
        return subprocess.CompletedProcess(argv, 1, "", "offline")

    monkeypatch.setattr(tools, "require", lambda *a, **kw: None)
    monkeypatch.setattr(cache.subprocess, "run", mvn)
    with pytest.raises(VirtbenchError):
        cache.scimark_jar()
    assert [p.parent for p in seen] == [roots["java"]]
    assert seen[0].name.startswith(f".vb-fetch-{os.getpid()}-")
    assert ownedtmp._OWNED.fullmatch(seen[0].name)
    assert not seen[0].exists()


@pytest.mark.skipif(tools.which("cc") is None, reason="no C compiler")
def test_gvisor_shim_builds_in_a_swept_staging_dir(roots, monkeypatch):
    from virtbench.platforms.container import gvisor

    seen: list[Path] = []
    real = gvisor.subprocess.run

    def cc(argv, cwd=None, **kw):  # subprocess.run itself: `cc --version` passes here too
        if "shim.c" in argv:
            seen.append(Path(cwd))
            assert ownedtmp.owner_alive(Path(cwd).name) is True
        return real(argv, cwd=cwd, **kw)

    monkeypatch.setattr(gvisor.subprocess, "run", cc)
    shim = gvisor.build_shim()
    assert [p.parent for p in seen] == [roots["probes"]]  # where the probes sweep looks
    assert seen[0].name.startswith(f".vb-build-{os.getpid()}-")
    assert shim.is_file() and shim.parent.parent == roots["probes"]
    assert sorted(p.name for p in roots["probes"].iterdir()) == [shim.parent.name]
    # an older version compiled inside the entry; killed there, it left no shim: rebuilt
    shim.unlink()
    (shim.parent / "tmpab12cd34").mkdir()
    assert gvisor.build_shim() == shim and shim.is_file()
    assert [p.name for p in shim.parent.iterdir()] == [shim.name]


def test_report_temp_file_is_owner_named_and_a_dead_ones_goes(tmp_path, monkeypatch):
    """The write-then-rename window is one write of a page held in memory; a report killed
    inside it leaves a hidden owner-named file, which the next report there removes."""
    from virtbench.report import build

    pid, start = dead_pid()
    out = tmp_path / "reports" / "r.html"
    out.parent.mkdir()
    stale = out.parent / f".vb-report-{pid}-{start}-abcd1234.html"
    live = (
        out.parent
        / f".vb-report-{os.getpid()}-{ownedtmp.process_start_time(os.getpid())}-abcd1234.html"
    )
    other = out.parent / ".vb-report-abcd1234"  # an older version's: no owner to ask
    for p in (stale, live, other):
        p.write_text("<html>half")
    names: list[str] = []
    real = os.replace

    def spy(src, dst):
        names.append(Path(src).name)
        return real(src, dst)

    monkeypatch.setattr(build, "render", lambda store, run_id: ("<html>ok</html>", "ok"))
    monkeypatch.setattr(safefs.os, "replace", spy)  # build writes through safefs
    assert build.write(None, "r", tmp_path, out) == (out, "ok")  # type: ignore[arg-type]
    assert out.read_text() == "<html>ok</html>"
    assert names[0].startswith(f".vb-report-{os.getpid()}-") and names[0].endswith(".html")
    assert ownedtmp._OWNED.fullmatch(names[0])
    assert not stale.exists() and live.exists() and other.exists()
