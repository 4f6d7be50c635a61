"""Which gVisor `runtime = "runsc"` runs: Debian's package, or a release built from
gVisor's Go module (container option `runsc`).

Debian 12's runsc is 0.0~20221219: ptrace platform, no directfs, no root overlay. Users run
current gVisor (systrap, directfs on, the root a sentry overlay backed by a host file), whose
figures differ. gVisor publishes its Go-buildable tree as the module gvisor.dev/gvisor (its
`go` branch: versions are Go pseudo-versions, the release-YYYYMMDD tags are not buildable
with `go`); `go install gvisor.dev/gvisor/runsc@<version>` builds runsc in minutes on 2
cores. Built once per version into the cache (cachedir kind "gvisor"), on first use or by
`virtbench setup --step gvisor` (the pinned version); the version is recorded with every
cell (label `runsc_build`, and in the `engine` label).

A build from the module reports "VERSION_MISSING" (`runsc --version`): its version is the
module version virtbench asked for, kept in the cache entry's VERSION file."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ... import cachedir, setup_host
from ...errors import VirtbenchError

MODULE = "gvisor.dev/gvisor/runsc"
DEBIAN = "debian"
PINNED_ALIAS = "pinned"
# the version measured here (docs/gvisor.md): the module's newest when this was written
PINNED = "v0.0.0-20260905035102-160fafc42237"
PSEUDO_VERSION = re.compile(r"^v0\.0\.0-\d{14}-[0-9a-f]{12}$")
ALLOWED = f'"{DEBIAN}" (default), "{PINNED_ALIAS}" ({PINNED}) or a gvisor.dev/gvisor Go version'
GO_PLACES = ("/usr/local/go/bin/go",)  # the official Go tarball's place, off Debian's PATH


def resolve(choice: str | None) -> str:
    """The build a campaign's `runsc` option names: DEBIAN or a module version."""
    if choice in (None, DEBIAN):
        return DEBIAN
    if choice == PINNED_ALIAS:
        return PINNED
    if isinstance(choice, str) and PSEUDO_VERSION.match(choice):
        return choice
    raise ValueError(choice)


def entry(version: str) -> Path:
    return cachedir.cache_root("gvisor") / version


def built(version: str) -> Path | None:
    """The cached runsc of `version`, if built (a regular file, never a link)."""
    path = entry(version) / "runsc"
    if path.is_symlink() or not path.is_file():
        return None
    return path


def go_binary() -> str | None:
    found = shutil.which("go")
    if found:
        return found
    return next((p for p in GO_PLACES if os.access(p, os.X_OK)), None)


def ensure(version: str, log=print) -> Path:
    """runsc of `version`, built from the Go module if not cached (minutes, needs Go and
    the module proxy or a filled module cache)."""
    if (path := built(version)) is not None:
        return path
    go = go_binary()
    if go is None:
        raise VirtbenchError(
            f'runsc = "{version}" needs the Go toolchain to build gVisor (Debian 12\'s golang'
            " 1.19 is too old for current gVisor: install Go >= 1.21 from go.dev/dl into"
            ' /usr/local/go), or use runsc = "debian"'
        )
    log(f"building gVisor runsc {version} from {MODULE} (minutes)")
    final = entry(version)

    def complete(d: Path) -> bool:
        return (d / "runsc").is_file() and (d / "VERSION").is_file()

    with cachedir.building(final, complete) as tmp:
        # static, as gVisor's own releases: the gofer and the sentry re-exec runsc through
        # /proc/self/exe inside their empty chroot, where a cgo build's ELF interpreter
        # (/lib64/ld-linux-x86-64.so.2) is absent: execve fails with ENOENT ("error
        # executing umounter: fork/exec /proc/self/exe: no such file or directory")
        env = {**os.environ, "GOBIN": str(tmp), "CGO_ENABLED": "0"}
        argv = [go, "install", f"{MODULE}@{version}"]
        try:
            r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
        except subprocess.TimeoutExpired:
            raise VirtbenchError(f"building runsc {version}: go install ran over an hour") from None
        if r.returncode != 0 or not (tmp / "runsc").is_file():
            raise VirtbenchError(
                f"building runsc {version} with {go} failed: {(r.stderr or r.stdout)[-800:]}"
            )
        if interpreter(tmp / "runsc") is not None:
            raise VirtbenchError(
                f"runsc {version} was linked dynamically (CGO_ENABLED=0 ignored by {go}?):"
                " it cannot re-exec itself inside its sandbox's chroot"
            )
        (tmp / "VERSION").write_text(version + "\n")
    return final / "runsc"


def interpreter(path: Path) -> str | None:
    """The ELF interpreter a binary asks for (PT_INTERP), None for a static one."""
    with path.open("rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit ELF only (amd64, arm64)
            return None
        phoff = int.from_bytes(head[32:40], "little")
        phentsize = int.from_bytes(head[54:56], "little")
        phnum = int.from_bytes(head[56:58], "little")
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            if int.from_bytes(ph[0:4], "little") == 3:  # PT_INTERP
                offset = int.from_bytes(ph[8:16], "little")
                size = int.from_bytes(ph[32:40], "little")
                f.seek(offset)
                return f.read(size).rstrip(b"\0").decode(errors="replace")
    return None


@setup_host.register("gvisor", opt_in=True)
def _setup(log) -> None:
    """`virtbench setup --step gvisor`: the pinned gVisor build (not part of a plain setup:
    it needs Go and minutes)."""
    log(f"gVisor runsc {PINNED}: {ensure(PINNED, log)}")
