"""The wheels an offline fleet host installs the project from, built once on the controller.

Why a wheelhouse rather than a wheel of the project: install.sh keeps building the shipped
source on the host (so the host runs exactly the tree it got), but with `pip --no-index
--find-links wheelhouse`: the build requirement (setuptools>=77) and every dependency come
from the tarball, so a host with no route to a package index installs, and every host of a
fleet gets the same dependency versions. Only the controller needs an index, once per set
of requirements and Python: the wheelhouse is cached (cachedir kind "wheelhouse"). It
travels as its own tarball, only to hosts marked `virtbench_offline=true` (about 25 MB
against the project's 400 KB: the other hosts install from their index as before).

Wheels are for the controller's Python (`PYTHON_FILE` says which); install.sh refuses an
offline install on a host whose Python differs, naming both."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
import tomllib
from pathlib import Path

from .. import cachedir
from ..errors import VirtbenchError

DIR = "wheelhouse"  # its name in the tarball, beside install.sh
PYTHON_FILE = "PYTHON"  # major.minor and machine the wheels are for


def python_tag() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor} {platform.machine()}"


def requirements(pyproject: Path) -> list[str]:
    """What a host's `pip install` of the project needs: the build requirements and the
    runtime dependencies (not the dev extras: hosts run, they do not develop)."""
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        what = f"{pyproject}: cannot read the project's requirements: {exc}"
        raise VirtbenchError(what) from None
    build = data.get("build-system", {}).get("requires", [])
    deps = data.get("project", {}).get("dependencies", [])
    return [*build, *deps]


def _key(reqs: list[str]) -> str:
    text = json.dumps([python_tag(), sorted(reqs)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _complete(d: Path) -> bool:
    return (d / PYTHON_FILE).is_file() and any(d.glob("*.whl"))


def ensure(pyproject: Path, log=print) -> Path:
    """The cached wheelhouse for these requirements and this Python, built (pip wheel, from
    the controller's index) if missing."""
    reqs = requirements(pyproject)
    final = cachedir.cache_root("wheelhouse") / _key(reqs)
    if _complete(final):
        return final
    log(f"building the fleet hosts' wheelhouse ({len(reqs)} requirements, Python {python_tag()})")
    with cachedir.building(final, _complete) as tmp:
        argv = [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(tmp), *reqs]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise VirtbenchError(
                "building the fleet's wheelhouse failed (the controller needs a package index"
                f" once per set of requirements): {(r.stderr or r.stdout).strip()[-600:]}"
            )
        (tmp / PYTHON_FILE).write_text(python_tag() + "\n")
    return final


def members(wheelhouse: Path) -> list[Path]:
    """The files shipped from it, sorted (the tarball is reproducible); never a link."""
    return sorted(p for p in wheelhouse.iterdir() if p.is_file() and not p.is_symlink())


def pack(wheelhouse: Path, target: Path) -> str:
    """The wheelhouse as a tarball of wheelhouse/* (unpacked beside install.sh); its sha256."""
    from .source import archive

    return archive(target, [(p, f"{DIR}/{p.name}") for p in members(wheelhouse)])
