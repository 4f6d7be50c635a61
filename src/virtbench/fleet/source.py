"""The project as shipped to every host: a tarball of the source tree this controller runs
(install.sh, pyproject.toml, src/ ...), so each host installs and runs exactly this code.

The tarball is reproducible (fixed gzip and member metadata, sorted names) and comes with a
digest of what it holds: a host that already installed the same project (its stamp says so)
gets neither the tarball nor the install again."""

from __future__ import annotations

import gzip
import hashlib
import tarfile
from pathlib import Path

from ..errors import VirtbenchError

NEEDED = ("install.sh", "pyproject.toml", "src/virtbench/__init__.py")
SHIPPED = ("install.sh", "pyproject.toml", "README.md", "LICENSE", "src", "campaigns")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def project_root() -> Path:
    import virtbench

    root = Path(virtbench.__file__).resolve().parents[2]
    missing = [n for n in NEEDED if not (root / n).exists()]
    if missing:
        raise VirtbenchError(
            f"virtbench runs from {root}, not a source tree ({', '.join(missing)} missing):"
            " a fleet ships the project with its install.sh; install virtbench from a"
            " checkout (./install.sh) to drive a fleet"
        )
    return root


def _files(root: Path) -> list[str]:
    """What install.sh needs to install the project (not its tests or benchmarks)."""
    names = []
    for top in SHIPPED:
        path = root / top
        if path.is_file() or path.is_symlink():
            names.append(top)
        elif path.is_dir():
            names += [
                str(p.relative_to(root))
                for p in sorted(path.rglob("*"))
                if (p.is_file() or p.is_symlink())
                and not SKIP_DIRS.intersection(p.relative_to(root).parts)
                and not p.name.endswith(".pyc")
            ]
    return sorted(names)


def _normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Who owns the checkout does not count: the same tree gives the same bytes. (Each
    file keeps its mtime: a wheel build refuses pre-1980 times, and it is stable as long as
    the checkout is.)"""
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def archive(target: Path, members: list[tuple[Path, str]]) -> str:
    """Write a reproducible .tar.gz of (path, name in the archive) pairs; its sha256."""
    with (
        target.open("wb") as raw,
        gzip.GzipFile("", "wb", 6, raw, mtime=0) as gz,  # no time in the gzip header
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path, name in members:
            tar.add(path, arcname=name, recursive=False, filter=_normal)
    return hashlib.sha256(target.read_bytes()).hexdigest()


def build(target: Path) -> str:
    """Write the project tarball to `target` (a .tar.gz); return its sha256, which names
    the project on the hosts (the install stamp)."""
    root = project_root()
    return archive(target, [(root / name, name) for name in _files(root)])
