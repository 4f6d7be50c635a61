"""The Wasm runtime carried by the shared image, so `scimark-wasm` runs inside every
environment (containers, VMs, containers in VMs) under the same wasmtime as on the host.

The runtime is the `wasmtime` Python package of virtbench's own environment (a ctypes
binding around its shared library, so any Python 3 runs it); the image gets Debian's
python3, a copy of that package and of `virtbench/wasm/run.py`, under IMAGE_DIR.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
from pathlib import Path

IMAGE_DIR = "/usr/local/lib/vb-wasm"  # inside the image
RUNNER = f"{IMAGE_DIR}/vb_wasm_run.py"
PACKAGE = "wasmtime"
_RUNNER_SOURCE = Path(__file__).resolve().parent.parent / "wasm" / "run.py"


def version() -> str | None:
    """The wasmtime package's version (part of the image key), None when not installed."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def install_into(tree: Path) -> str | None:
    """Copy the runtime into an image tree being built; its version, or None without it."""
    spec = importlib.util.find_spec(PACKAGE)
    v = version()
    if spec is None or spec.origin is None or v is None:
        return None
    dest = tree / IMAGE_DIR.lstrip("/")
    dest.mkdir(parents=True, exist_ok=True)
    package = Path(spec.origin).parent
    shutil.copytree(package, dest / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    dist = importlib.metadata.distribution(PACKAGE)
    info = Path(str(dist.locate_file(""))) / f"{PACKAGE}-{v}.dist-info"
    if info.is_dir():  # run.py reports the version from it
        shutil.copytree(info, dest / info.name)
    shutil.copy2(_RUNNER_SOURCE, dest / "vb_wasm_run.py")
    return v


def argv(module: str) -> list[str]:
    """Run a WASI module with the image's runtime (inside an environment)."""
    return ["env", f"PYTHONPATH={IMAGE_DIR}", "python3", RUNNER, module]


def probe_argv() -> list[str]:
    return ["env", f"PYTHONPATH={IMAGE_DIR}", "python3", "-c", f"import {PACKAGE}"]
