"""`runtime = "runsc"` names a gVisor build (issue 42): Debian's package or a release built
from gVisor's Go module, cached, its version recorded; opt-in in `virtbench setup`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from virtbench import setup_all, setup_host
from virtbench.errors import PlatformError, VirtbenchError
from virtbench.platforms.container import gvisor_build, runtimes
from virtbench.platforms.container.options import ContainerOptions
from virtbench.platforms.options import OptionError

VERSION = "v0.0.0-20260905035102-160fafc42237"


def _opts(**kw) -> ContainerOptions:
    return ContainerOptions.parse({"runtime": "runsc", **kw})


def test_runsc_option_names_the_build():
    assert _opts().runsc == gvisor_build.DEBIAN
    assert _opts(runsc="debian").runsc == gvisor_build.DEBIAN
    assert _opts(runsc="pinned").runsc == gvisor_build.PINNED
    assert _opts(runsc=VERSION).runsc == VERSION


@pytest.mark.parametrize("bad", ["release-20251110.0", "latest", "v1.0", 3])
def test_a_build_that_is_not_a_go_version_is_refused_naming_what_is(bad):
    with pytest.raises(OptionError) as exc:
        _opts(runsc=bad)
    assert exc.value.key == "runsc" and "pinned" in str(exc.value.allowed)


def test_runsc_build_applies_only_to_gvisor():
    with pytest.raises(OptionError, match="runsc"):
        ContainerOptions.parse({"runtime": "crun", "runsc": "pinned"})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VIRTBENCH_GVISOR_DIR", str(tmp_path / "gvisor"))
    return tmp_path / "gvisor"


def test_a_built_release_runs_from_the_cache_with_its_own_state_root(cache):
    rt = runtimes.get("runsc", "host", runsc=VERSION)
    with pytest.raises(PlatformError, match="is not built"):
        rt.base()
    (cache / VERSION).mkdir(parents=True)
    (cache / VERSION / "runsc").write_text("#!/bin/true\n")
    base = rt.base()
    assert base[0] == str(cache / VERSION / "runsc")
    assert base[2].endswith(f"runsc-{VERSION}")  # not Debian's state root
    # the build's default platform (systrap), as its users run it; Debian's: ptrace
    assert not any(a.startswith("--platform") for a in base)
    assert "--platform=ptrace" in runtimes.get("runsc", "host").base()
    labels = rt.labels()
    assert labels["runsc_build"] == VERSION and labels["runtime_version"] == f"go {VERSION}"
    assert "runsc_build" not in runtimes.get("runsc", "host").labels()
    assert runtimes.get("runsc", "host").base()[0] == "runsc"


def test_a_link_in_the_cache_is_not_run(cache, tmp_path):
    (cache / VERSION).mkdir(parents=True)
    (tmp_path / "elsewhere").write_text("x")
    (cache / VERSION / "runsc").symlink_to(tmp_path / "elsewhere")
    assert gvisor_build.built(VERSION) is None


def test_building_without_go_says_what_to_install(cache, monkeypatch):
    monkeypatch.setattr(gvisor_build, "go_binary", lambda: None)
    with pytest.raises(VirtbenchError, match="Go toolchain"):
        gvisor_build.ensure(VERSION, log=lambda m: None)
    assert not (cache / VERSION).exists()


def test_the_gvisor_setup_step_is_opt_in(monkeypatch):
    ran = []
    monkeypatch.setattr(gvisor_build, "ensure", lambda v, log: ran.append(v) or "x")
    monkeypatch.setattr(setup_host, "STEPS", [("gvisor", gvisor_build._setup)])
    setup_all.run_steps(lambda m: None)
    assert ran == []  # a plain `virtbench setup` does not build gVisor
    setup_all.run_steps(lambda m: None, {"gvisor"})
    assert ran == [gvisor_build.PINNED]


def test_the_cleaner_finds_containers_of_every_build(tmp_path, monkeypatch, cache):
    monkeypatch.setattr(runtimes, "STATE_ROOT", tmp_path / "oci")
    (tmp_path / "oci" / f"runsc-{VERSION}" / "vb-abc").mkdir(parents=True)
    (tmp_path / "oci" / "runsc-notaversion").mkdir()
    builds = [r for r in runtimes.every() if isinstance(r, runtimes.Runsc)]
    assert [r.build for r in builds] == [gvisor_build.DEBIAN, VERSION]
    assert builds[1].list_ids() == []  # the build is gone: nothing to run `delete` with
    (cache / VERSION).mkdir(parents=True)
    (cache / VERSION / "runsc").write_text("")
    assert builds[1].list_ids() == ["vb-abc"]


def test_the_build_is_static_so_runsc_can_re_exec_itself_in_its_chroot(cache, monkeypatch):
    # a cgo build asks for /lib64/ld-linux-x86-64.so.2, absent in the gofer's and sentry's
    # chroot: their re-exec through /proc/self/exe failed with ENOENT (issue 42)
    seen = {}

    def fake_go(argv, env, **kw):
        seen.update(argv=argv, env=env)
        Path(env["GOBIN"], "runsc").write_bytes(b"not an ELF")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(gvisor_build, "go_binary", lambda: "/usr/local/go/bin/go")
    monkeypatch.setattr(gvisor_build.subprocess, "run", fake_go)
    path = gvisor_build.ensure(VERSION, log=lambda m: None)
    assert seen["env"]["CGO_ENABLED"] == "0"
    assert seen["argv"][1:] == ["install", f"gvisor.dev/gvisor/runsc@{VERSION}"]
    assert path == cache / VERSION / "runsc" and gvisor_build.built(VERSION) == path
    assert (cache / VERSION / "VERSION").read_text().strip() == VERSION


def test_elf_interpreter_of_dynamic_and_static_binaries(tmp_path):
    assert gvisor_build.interpreter(Path(sys.executable).resolve()) is not None
    static = tmp_path / "static"
    header = bytearray(64)
    header[:5] = b"\x7fELF\x02"
    static.write_bytes(bytes(header))  # no program headers: no PT_INTERP
    assert gvisor_build.interpreter(static) is None


def test_each_build_is_judged_by_its_own_o_direct_mechanism():
    from virtbench.platforms import engine_config
    from virtbench.platforms.container import gvisor

    data = Path(__file__).parent.parent / "data" / "engines"
    debian = engine_config.runsc_config((data / "runsc-20221219-debug.log").read_text())
    current = engine_config.runsc_config((data / "runsc-go-20260905-debug.log").read_text())
    old = gvisor.direct_io_mechanism("volume", "0.0~20221219.0", debian)
    assert "gofer opened without O_DIRECT" in old
    new_volume = gvisor.direct_io_mechanism("volume", f"go {VERSION}", current)
    assert "directfs" in new_volume and "gofer" not in new_volume
    new_overlay = gvisor.direct_io_mechanism("overlay", f"go {VERSION}", current)
    assert "overlay2=root:self" in new_overlay and "sentry's memory" in new_overlay
    # Debian's overlay2 reads "Root=false, ...": no root overlay, its gofer says why
    assert "gofer" in gvisor.direct_io_mechanism("overlay", "0.0~20221219.0", debian)
