"""Issue 37 item 2: child Pythons never import from the cwd; tools are never found through
an empty or relative PATH entry."""

from __future__ import annotations

import os
import subprocess

from virtbench import pychild, watchdog


def _plant(cwd, marker):
    """A `virtbench` package in the cwd whose watchdog (and any module) leaves a marker."""
    pkg = cwd / "virtbench"
    (pkg / "wasm").mkdir(parents=True)
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for rel in ("__init__.py", "watchdog.py", "wasm/__init__.py", "wasm/run.py"):
        (pkg / rel).write_text(code)
    (cwd / "wasmtime.py").write_text(code)


def test_the_watchdog_started_as_the_runner_does_ignores_a_planted_module(tmp_path, monkeypatch):
    cwd, marker = tmp_path / "cwd", tmp_path / "marker"
    cwd.mkdir()
    _plant(cwd, marker)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PYTHONPATH", "")  # "" on the path is the cwd too
    with watchdog.guard():  # the runner's own start of the watchdog, a clean exit
        pass
    assert not marker.exists(), marker.read_text()


def test_module_and_code_children_run_this_virtbench_not_the_cwds(tmp_path):
    cwd, marker = tmp_path / "cwd", tmp_path / "marker"
    cwd.mkdir()
    _plant(cwd, marker)
    argv = pychild.module_argv("virtbench.pychild")  # a module with no side effect
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    probe = "import virtbench, wasmtime; print(virtbench.__file__)"
    r = subprocess.run(pychild.code_argv(probe), cwd=cwd, capture_output=True, text=True)
    assert not marker.exists(), marker.read_text()
    assert str(cwd) not in r.stdout


def test_the_wasm_runner_argv_is_isolated():
    from virtbench.workloads import wasm

    class Env:
        def __init__(self):
            self.argvs = []

        def exec(self, argv, timeout=None):
            self.argvs.append(argv)

            class R:
                ok = len(self.argvs) > 1  # no image runtime; virtbench's Python has wasmtime

            return R()

    env = Env()
    wl = next(c for c in vars(wasm).values() if getattr(c, "runtime", None) == "wasmtime")
    argv = wl.prefix(wl.__new__(wl), env, "/x.wasm")
    assert "-I" in argv and "-I" in env.argvs[1]
    assert argv[-2:] == ["virtbench.wasm.run", "/x.wasm"]


def test_relative_and_empty_path_entries_are_dropped():
    env = {"PATH": ".:/usr/bin::bin:/sbin:"}
    pychild.drop_relative_path_entries(env)
    assert env["PATH"] == "/usr/bin:/sbin"
    assert os.path.isabs(pychild.module_argv("x")[0])
