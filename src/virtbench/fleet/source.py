"""The project as shipped to every host: a tarball of the source tree this controller runs
(install.sh, pyproject.toml, src/ ...), so each host installs and runs exactly this code."""

from __future__ import annotations

import tarfile
from pathlib import Path

from ..errors import VirtbenchError

NEEDED = ("install.sh", "pyproject.toml", "src/virtbench/__init__.py")
SHIPPED = ("install.sh", "pyproject.toml", "README.md", "LICENSE", "src", "campaigns")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
CAMPAIGN = "fleet-campaign.toml"  # a campaign file travels beside the project


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
    return names


def build(target: Path, campaign: Path | None = None) -> Path:
    """Write the project tarball (with `campaign` as CAMPAIGN) to `target`, a .tar.gz."""
    root = project_root()
    with tarfile.open(target, "w:gz") as tar:
        for name in _files(root):
            tar.add(root / name, arcname=name, recursive=False)
        if campaign is not None:
            tar.add(campaign, arcname=CAMPAIGN)
    return target
