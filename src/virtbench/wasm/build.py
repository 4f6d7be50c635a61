"""Build the SciMark kernels (wasm/scimark.c) twice from the one source with the one compiler:
a static native binary (runs on the host, in any container root, in a VM guest) and a WASI
module (runs under wasmtime). Debian's clang, lld (wasm-ld) and wasi-libc; same -O2 flags,
only the target differs, so native vs Wasm compares like with like.

Cached under /var/lib/virtbench/wasm/<hash> (as root; else ~/.cache/virtbench/wasm, or
VIRTBENCH_WASM_DIR); the hash covers the source, the compiler version and the flags.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from .. import cachedir, setup_host, tools
from ..errors import VirtbenchError

SOURCE = "scimark.c"
NATIVE = "vb-scimark"
MODULE = "vb-scimark.wasm"
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror")
TARGETS = {
    NATIVE: ("-static",),
    MODULE: ("--target=wasm32-wasi", "-Wl,--strip-all"),
}


def cache_root() -> Path:
    return cachedir.cache_root("wasm")


def _source() -> bytes:
    return (resources.files("virtbench") / "wasm" / SOURCE).read_bytes()


def build_hash() -> str:
    h = hashlib.sha256(_source())
    h.update((tools.version("clang") or "none").encode())
    h.update(repr((CFLAGS, TARGETS)).encode())
    return h.hexdigest()[:16]


def _hint(stderr: str) -> str:
    if "wasm-ld" in stderr:
        return " (the Wasm linker is in Debian's lld package)"
    if "stdio.h" in stderr or "crt1" in stderr:
        return " (the WASI C library is Debian's wasi-libc package)"
    if "libclang_rt.builtins-wasm32" in stderr:
        return " (Wasm builtins are in Debian's libclang-rt-14-dev-wasm32 package)"
    return ""


def build(log: Callable[[str], None] = lambda m: None) -> Path:
    """Build both if not cached; return the directory holding vb-scimark and its .wasm."""
    tools.require(["clang", "wasm-ld"], needed_by="the Wasm kernels")
    final = cache_root() / build_hash()
    if _complete(final):
        return final
    with cachedir.building(final, _complete) as tmp:
        (tmp / SOURCE).write_bytes(_source())
        for out, target_flags in TARGETS.items():
            argv = [tools.which("clang") or "clang", *CFLAGS, *target_flags, "-o", out, SOURCE]
            argv.append("-lm")
            log(" ".join(argv))
            r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise VirtbenchError(
                    f"building {out} failed{_hint(r.stderr)}: {r.stderr.strip()[-800:]}"
                )
    return final


def _complete(d: Path) -> bool:
    return all((d / name).exists() for name in TARGETS)


@setup_host.register("wasm")
def _setup_step(log: Callable[[str], None]) -> None:
    log(f"SciMark kernels (native and Wasm) built in {build(log)}")
