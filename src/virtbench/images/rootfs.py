"""The shared root filesystem: a Debian minbase tree holding the workload tools, built once.

Containers mount it read-only as the lower layer of their overlay, and the VM guest image is
made from it, so every platform runs the same binaries. The tree is cached under
IMAGES_DIR/<key>/rootfs where the key hashes the suite and the package list: appending a
package makes a new key (and a rebuild); an unchanged key is never rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from .. import cleanup, setup_host, tools
from ..errors import NeedsRootError, VirtbenchError
from ..filelock import file_lock
from ..naming import NAME_PREFIX
from . import wasm_runtime

SUITE = "bookworm"
VARIANT = "minbase"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
IMAGES_DIR = Path(os.environ.get("VIRTBENCH_IMAGES", "/var/lib/virtbench/images"))
# Bump when the build recipe (trimming, config) changes so old trees are not reused.
RECIPE = 1

# The tools inside the image are tools.py's (`in_image`: each tool's package is named once,
# there); these are the image's packages that no tool of that table stands for. Other
# platforms append what they need (then the key changes).
IMAGE_ONLY = [
    "libnginx-mod-rtmp",  # the conference suite's RTMP media server (workloads/conference.py)
    "qemu-guest-agent",
    "procps",
    "ca-certificates",
    "python3",  # runs the Wasm runtime's Python package (wasm_runtime.py) in environments
]
# the tools' packages include nftables (in-guest DNAT for containers inside a VM:
# container@vm, network = "nat"), openjdk-17-jre-headless (the java suite's JVM) and
# docker.io (Docker inside a VM guest, container@vm with runtime = "docker": dockerd, its
# client, containerd, runc, tini and iptables; never started in the tree (debootstrap's
# policy-rc.d), only by virtbench in a guest)
PACKAGES: list[str] = sorted(tools.image_packages()) + IMAGE_ONLY

# What is removed after the build to keep the tree small (docs, manuals, locales, caches).
TRIM = [
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "var/cache/apt/archives",
    "var/lib/apt/lists",
]
DPKG_NODOC = """# virtbench: keep the image small
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
"""
COMPLETE = ".vb-complete"


def key(packages: list[str] | None = None, suite: str = SUITE) -> str:
    """Cache key: a hash of suite, variant, recipe and the sorted package list."""
    pkgs = sorted(set(PACKAGES if packages is None else packages))
    blob = json.dumps(
        {
            "suite": suite,
            "variant": VARIANT,
            "recipe": RECIPE,
            "packages": pkgs,
            "wasmtime": wasm_runtime.version(),  # copied in: a new version, a new image
        }
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def image_dir(k: str | None = None) -> Path:
    return IMAGES_DIR / (k or key())


def existing() -> Path | None:
    """The cached tree for the current key, or None if it is not built yet."""
    tree = image_dir() / "rootfs"
    return tree if (image_dir() / COMPLETE).exists() else None


def mirror(sources_dir: Path = Path("/etc/apt")) -> str:
    """The host's configured Debian mirror (deb822 or one-line sources), else deb.debian.org."""
    if os.environ.get("VIRTBENCH_MIRROR"):
        return os.environ["VIRTBENCH_MIRROR"]
    texts: list[str] = []
    for f in [sources_dir / "sources.list", *sorted(sources_dir.glob("sources.list.d/*"))]:
        if f.suffix in (".list", ".sources") and f.is_file():
            with contextlib.suppress(OSError):
                texts.append(f.read_text())
    return parse_mirror("\n".join(texts)) or DEFAULT_MIRROR


_URI = re.compile(r"(?:^URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", re.MULTILINE)


def parse_mirror(text: str) -> str | None:
    """First Debian main-archive URI in sources text (skips -security and third parties)."""
    for m in _URI.finditer(text):
        uri = m.group(1).rstrip("/")
        if uri.endswith("/debian") and "security" not in uri:
            return uri
    return None


def _lock() -> contextlib.AbstractContextManager[None]:
    """Serialize builds across processes (parallel `virtbench` runs share the cache)."""
    return file_lock(IMAGES_DIR / ".lock")


def rootfs_tree(log: Callable[[str], None] = print) -> Path:
    """Return the cached tree, building it with debootstrap first if the key is new."""
    found = existing()
    if found is not None:
        return found
    if os.geteuid() != 0:
        raise NeedsRootError("building the root filesystem image (debootstrap)")
    tools.require(["debootstrap"], needed_by="the root filesystem image")
    with _lock():
        found = existing()  # another process may have built it while we waited
        if found is not None:
            return found
        return _build(log)


def build(force: bool = False, log: Callable[[str], None] = print) -> Path:
    """`virtbench images build`: the tree for the current key, built only if missing (or
    rebuilt with force; the old tree is replaced only once the new one is complete)."""
    if not force:
        found = existing()
        if found is not None:
            log(f"root filesystem {key()} is already built: {found} (--force rebuilds it)")
            return found
    if os.geteuid() != 0:
        raise NeedsRootError("building the root filesystem image (debootstrap)")
    tools.require(["debootstrap"], needed_by="the root filesystem image")
    with _lock():
        found = existing()
        if found is not None and not force:
            log(f"root filesystem {key()} was built meanwhile: {found}")
            return found
        if found is not None and in_use(found):
            raise VirtbenchError(
                f"root filesystem {found} is in use by running containers "
                f"({', '.join(in_use(found))}); stop them (or run: virtbench cleanup) "
                "before rebuilding it with --force"
            )
        return _build(log)


def in_use(tree: Path) -> list[str]:
    """Mount points of overlays that use `tree` as a lower layer (running containers)."""
    users = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            pre, _sep, post = line.partition(" - ")
            if post.startswith("overlay ") and f"lowerdir={tree}" in post.replace(":", ","):
                users.append(pre.split()[4])
    return users


def status() -> list[dict]:
    """Every cached image: key, whether complete, whether it is the current key, manifest."""
    current = key()
    out = []
    if IMAGES_DIR.is_dir():
        for d in sorted(IMAGES_DIR.iterdir()):
            if not (d / "rootfs").is_dir():
                continue  # other image kinds (the VM's) live beside these trees
            m = {}
            with contextlib.suppress(OSError, ValueError):
                m = json.loads((d / "manifest.json").read_text())
            out.append(
                {
                    "key": d.name,
                    "path": str(d / "rootfs"),
                    "complete": (d / COMPLETE).exists(),
                    "current": d.name == current,
                    "built_at": m.get("built_at"),
                    "build_seconds": m.get("build_seconds"),
                    "packages": len(m.get("packages", [])),
                    "size_mb": m.get("size_mb"),
                }
            )
    return out


def _build(log: Callable[[str], None]) -> Path:
    k = key()
    final = image_dir(k)
    work = IMAGES_DIR / f"{NAME_PREFIX}build-{k}-{os.getpid()}"
    tree = work / "rootfs"
    _remove_tree(work)
    tree.mkdir(parents=True)
    url = mirror()
    pkgs = sorted(set(PACKAGES))
    log(f"building root filesystem {k}: debootstrap {SUITE} {VARIANT} from {url}")
    log(f"  packages: {' '.join(pkgs)}")
    start = time.monotonic()
    argv = [
        "debootstrap",
        f"--variant={VARIANT}",
        "--include=" + ",".join(pkgs),
        SUITE,
        str(tree),
        url,
    ]
    try:
        _run_logged(argv, log)
        _trim(tree)
        wasmtime = wasm_runtime.install_into(tree)
        manifest = {
            "key": k,
            "suite": SUITE,
            "variant": VARIANT,
            "mirror": url,
            "packages": pkgs,
            "installed": _installed(tree),
            "wasmtime": wasmtime,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "build_seconds": round(time.monotonic() - start, 1),
            "size_mb": _du_mb(tree),
        }
        (work / "manifest.json").write_text(json.dumps(manifest, indent=1))
        (work / COMPLETE).write_text(k + "\n")
        _remove_tree(final)  # a half-built tree from an older crash, never a complete one
        os.rename(work, final)
    except BaseException:
        _remove_tree(work)
        raise
    size = _du_mb(final / "rootfs")
    log(f"root filesystem {k} ready in {time.monotonic() - start:.0f}s ({size} MB): {final}")
    return final / "rootfs"


def _run_logged(argv: list[str], log: Callable[[str], None]) -> None:
    """Run debootstrap, showing one line per phase and a count while it unpacks/configures."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"},
    )
    tail: list[str] = []
    seen: set[str] = set()
    count, last = 0, 0.0
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-15:]
        if not line.startswith("I: "):
            continue
        count += 1
        verb = line[3:].split(" ", 1)[0]
        # a line per new phase, else one every few seconds: progress without 500 lines
        if verb not in seen or time.monotonic() - last > 10:
            seen.add(verb)
            last = time.monotonic()
            log(f"  debootstrap [{count}]: {line[3:]}")
    if proc.wait() != 0:
        raise VirtbenchError(
            f"debootstrap failed (exit {proc.returncode}); last output:\n  " + "\n  ".join(tail)
        )


def _trim(tree: Path) -> None:
    for rel in TRIM:
        d = tree / rel
        if d.is_dir():
            for child in d.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
    cfg = tree / "etc/dpkg/dpkg.cfg.d"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "virtbench-nodoc").write_text(DPKG_NODOC)


def _installed(tree: Path) -> dict[str, str]:
    """package -> version, from the image's dpkg status (recorded with results)."""
    out: dict[str, str] = {}
    pkg = None
    try:
        text = (tree / "var/lib/dpkg/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("Package: "):
            pkg = line.split(": ", 1)[1]
        elif line.startswith("Version: ") and pkg:
            out[pkg] = line.split(": ", 1)[1]
    return out


def manifest(tree: Path | None = None) -> dict:
    tree = tree or existing()
    if tree is None:
        return {}
    try:
        return json.loads((tree.parent / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def _du_mb(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
    return total // (1 << 20)


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path).rstrip("/") + "/"
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            mnt = line.split()[4].replace("\\040", " ")
            if mnt.startswith(prefix) or mnt == prefix[:-1]:
                found.append(mnt)
    return sorted(found, key=len, reverse=True)


def _remove_tree(path: Path) -> None:
    """Remove a build dir; debootstrap may have left /proc or /sys mounted in it on a crash."""
    for mnt in _mounts_under(path):
        subprocess.run(["umount", "-l", mnt], capture_output=True)
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)


@cleanup.register("image builds")
def clean_builds() -> list[str]:
    """Half-finished builds (vb-build-*) of crashed runs; complete images are kept."""
    removed = []
    if IMAGES_DIR.is_dir():
        for d in IMAGES_DIR.glob(f"{NAME_PREFIX}build-*"):
            pid = d.name.rsplit("-", 1)[-1]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                continue  # a build still in progress in another process
            _remove_tree(d)
            removed.append(f"image build dir {d}")
    return removed


@setup_host.register("rootfs")
def _setup_step(log: Callable[[str], None]) -> None:
    rootfs_tree(log)
