"""Start child Pythons (and tools found on PATH) that never take code from the cwd.

`python -m virtbench.watchdog` puts the current directory first on sys.path: run as root
in a directory another user can write, a planted `virtbench/watchdog.py` would run as root
(and could disable crash cleanup). `module_argv` runs a module with `-I` (isolated: no cwd,
no PYTHON* variables, no user site) and the absolute directory of *this* virtbench put on
sys.path, so the child runs the same code as its parent and nothing else.

`drop_relative_path_entries` does the same for executables: an empty or relative PATH entry
(`PATH=.:/usr/bin`, `PATH=/usr/bin:`) would make root run `./ip` for `ip`.

Ground level: the standard library only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# run a module by name from an explicit root, after -I left the cwd out of sys.path
_BOOT = (
    "import runpy, sys; sys.path.insert(0, sys.argv[1]); m = sys.argv[2]; del sys.argv[1:3];"
    " runpy.run_module(m, run_name='__main__', alter_sys=True)"
)


def package_root() -> Path:
    """The directory that holds this `virtbench` package (absolute, symlinks resolved)."""
    return Path(__file__).resolve().parent.parent


def python() -> str:
    """This interpreter, by absolute path."""
    return os.path.abspath(sys.executable)


def module_argv(module: str, *args: str) -> list[str]:
    """argv running `python -m module args...` without the cwd or PYTHONPATH on sys.path."""
    return [python(), "-I", "-c", _BOOT, str(package_root()), module, *args]


def code_argv(code: str) -> list[str]:
    """argv running `python -c code` isolated (-I: the cwd is not on sys.path)."""
    return [python(), "-I", "-c", code]


def drop_relative_path_entries(env: dict[str, str] | None = None) -> None:
    """Remove empty and relative entries from PATH (os.environ by default), in place."""
    env = os.environ if env is None else env
    if "PATH" in env:
        entries = env["PATH"].split(os.pathsep)
        env["PATH"] = os.pathsep.join(e for e in entries if e and os.path.isabs(e))
