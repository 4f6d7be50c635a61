"""`virtbench setup`: install the Debian packages of every tool; the registry of build steps
(root filesystem image, VM image, latency probes), each idempotent and cached.

Low level: a module with a build step imports only this to register it; `setup_all`
(top level) loads every such module and runs the steps."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from . import tools
from .errors import NeedsRootError, VirtbenchError

# Packages needed beyond the tools' own (libraries, kernel for guests, helpers); a tool's
# package is named in tools.TOOLS only.
EXTRA_PACKAGES = ["procps", "ca-certificates"]
# the VM platform boots Debian's kernel from /boot (direct kernel boot, modules in initramfs)
EXTRA_PACKAGES.append("linux-image-amd64")
# the latency probes link statically (libc.a); gcc only recommends it
EXTRA_PACKAGES.append("libc6-dev")
# guest kernels compressed with zstd are unpacked with it for direct boot
EXTRA_PACKAGES.append("zstd")
# clang's WASI target: the C library and the compiler builtins for wasm32
EXTRA_PACKAGES += ["wasi-libc", "libclang-rt-14-dev-wasm32"]
# the application suite: JMeter's HTTP sampler, embedded Tomcat 10 and HSQLDB (jars only; the
# `tomcat10` package itself is not needed: it would bring a system service)
EXTRA_PACKAGES += ["jmeter-http", "libtomcat10-java", "libhsqldb-java"]
# the conference suite's media server on the native platform: nginx's RTMP module
EXTRA_PACKAGES.append("libnginx-mod-rtmp")


class NotInstalled(VirtbenchError):
    """Some packages could not be installed (the others were): setup goes on, then fails."""


STEPS: list[tuple[str, Callable[[Callable[[str], None]], None]]] = []
OPT_IN: set[str] = set()  # steps run only when named (`setup --step NAME`)


def register(name: str, opt_in: bool = False):
    """A build step run by `virtbench setup` after the packages are installed; an opt-in
    step (a long build few campaigns need) only with `--step NAME`."""

    def deco(fn: Callable[[Callable[[str], None]], None]):
        STEPS.append((name, fn))
        if opt_in:
            OPT_IN.add(name)
        return fn

    return deco


def packages() -> list[str]:
    required = {t.package for t in tools.TOOLS.values() if not t.optional}
    return sorted(required | set(EXTRA_PACKAGES))


def missing_packages() -> list[str]:
    """Packages not installed according to dpkg (so a re-run of setup skips apt entirely)."""
    pkgs = packages()
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n", *pkgs],
            capture_output=True,
            text=True,
        ).stdout
    except OSError:
        return pkgs
    installed = {ln.split()[0] for ln in out.splitlines() if ln.endswith(" installed")}
    return [p for p in pkgs if p not in installed]


def install_packages(log: Callable[[str], None]) -> None:
    if os.geteuid() != 0:
        raise NeedsRootError("installing Debian packages (apt-get)")
    pkgs = missing_packages()
    if not pkgs:
        log("Debian packages: all installed")
        return
    log(f"apt-get install {len(pkgs)} packages: {' '.join(pkgs)}")
    r = _apt(["update", "-q"])
    if r.returncode != 0:
        raise VirtbenchError(f"apt-get update failed: {r.stderr.strip()[-800:]}")
    if _apt(_INSTALL + pkgs).returncode == 0:
        return
    # one package apt cannot install (e.g. docker.io beside Docker's own docker-ce or
    # containerd.io: they conflict) must not keep the others out: one at a time, then say
    # which failed, why, and what needs them
    failed = {}
    for pkg in pkgs:
        r = _apt([*_INSTALL, pkg])
        if r.returncode != 0:
            failed[pkg] = _apt_reason(r.stderr)
            log(f"apt-get install {pkg} failed: {failed[pkg]}")
    if failed:
        raise NotInstalled(not_installed(failed, len(pkgs)))


_INSTALL = ["install", "-y", "-q", "--no-install-recommends"]


def _apt(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], env=env, capture_output=True, text=True)


def _apt_reason(stderr: str) -> str:
    """apt's own reason: its `E:` lines (the last few lines if it printed none)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("E:")] or lines[-3:]
    return " ".join(errors)[-400:] or "apt-get failed without a message"


def not_installed(failed: dict[str, str], tried: int) -> str:
    """Which packages apt could not install, apt's reason and what needs each (pure)."""
    parts = []
    for pkg, reason in failed.items():
        users = [f"{t.name}: {t.purpose}" for t in tools.TOOLS.values() if t.package == pkg]
        needed = f" (needed for {'; '.join(users)})" if users else ""
        parts.append(f"{pkg}{needed}: {reason}")
    return (
        f"apt-get could not install {len(failed)} of {tried} packages (the others are"
        " installed; campaigns that need these fail naming the package): " + " | ".join(parts)
    )
