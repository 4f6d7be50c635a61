"""Build virtbench's own probes (src/virtbench/probes/*.c) into static binaries, cached.

The probes are static so the same file runs on the host, in any container root and in a VM
guest (see `Platform.put_file`). Binaries are cached under
/var/lib/virtbench/probes/<hash>/ (as root; else ~/.cache/virtbench/probes/<hash>/), where
the hash covers the sources, the compiler version and the flags, so a changed source or
compiler builds afresh. Builds go to a temporary directory renamed into place, so
concurrent builds never see a half-written binary.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from . import cachedir, setup_host, tools
from .errors import VirtbenchError

PROBES = ("tick", "switch", "load")  # vb-<name> from probes/<name>.c
CFLAGS = ("-O2", "-static", "-pthread", "-Wall", "-Wextra", "-Werror")


def _sources() -> dict[str, bytes]:
    folder = resources.files("virtbench") / "probes"
    return {
        p.name: p.read_bytes()
        for p in folder.iterdir()
        if p.name.endswith(".c") or p.name.endswith(".h")
    }


def cache_root() -> Path:
    return cachedir.cache_root("probes")  # VIRTBENCH_PROBES_DIR moves it


def build_hash() -> str:
    h = hashlib.sha256()
    for name, data in sorted(_sources().items()):
        h.update(name.encode() + b"\0" + data + b"\0")
    h.update((tools.version("cc") or "none").encode())
    h.update(" ".join(CFLAGS).encode())
    return h.hexdigest()[:16]


def build(log: Callable[[str], None] = lambda m: None) -> Path:
    """Build all probes if not cached; return the directory holding vb-<name> binaries."""
    tools.require(["cc"], needed_by="the latency probes")
    final = cache_root() / build_hash()
    if _complete(final):
        return final
    with cachedir.building(final, _complete) as tmp:
        for name, data in _sources().items():
            (tmp / name).write_bytes(data)
        for probe in PROBES:
            argv = [tools.which("cc") or "cc", *CFLAGS, "-o", f"vb-{probe}", f"{probe}.c"]
            log(" ".join(argv))
            r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                hint = (
                    " (static linking needs libc6-dev: apt-get install libc6-dev)"
                    if "cannot find -lc" in r.stderr
                    else ""
                )
                raise VirtbenchError(
                    f"building probe vb-{probe} failed{hint}: {r.stderr.strip()[-800:]}"
                )
    return final


def _complete(d: Path) -> bool:
    return all((d / f"vb-{p}").exists() for p in PROBES)


def probe_path(name: str) -> str:
    """Host path of the static binary vb-<name>, built on demand."""
    if name not in PROBES:
        raise ValueError(f"unknown probe '{name}'; allowed: {', '.join(PROBES)}")
    return str(build() / f"vb-{name}")


@setup_host.register("probes")
def _setup_step(log: Callable[[str], None]) -> None:
    log(f"latency probes built in {build(log)}")
