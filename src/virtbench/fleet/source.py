"""The project as shipped to every host: a tarball of the source tree this controller runs
(install.sh, pyproject.toml, src/ ...), so each host installs and runs exactly this code."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

from ..errors import VirtbenchError

NEEDED = ("install.sh", "pyproject.toml", "src/virtbench/__init__.py")
SKIP_DIRS = {".git", "__pycache__", "results", ".venv", ".pytest_cache", ".ruff_cache"}


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
    """Tracked and untracked-but-not-ignored files in a git checkout (what the working tree
    runs), every file outside the skipped directories otherwise."""
    if (root / ".git").exists():
        r = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
        )
        if r.returncode == 0:
            names = [n for n in r.stdout.decode().split("\0") if n]
            return [n for n in dict.fromkeys(names) if (root / n).is_file()]
    return [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(root).parts)
    ]


def build(target: Path) -> Path:
    """Write the project tarball to `target` (a .tar.gz) and return it."""
    root = project_root()
    with tarfile.open(target, "w:gz") as tar:
        for name in _files(root):
            tar.add(root / name, arcname=name, recursive=False)
    return target
