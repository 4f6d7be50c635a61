"""Where the cgroup hierarchies are (v1 legacy/hybrid or v2 unified) and plain file I/O on
them: the ground the group and real-time modules stand on."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import hostinfo
from ..errors import PlatformError

ROOT = Path("/sys/fs/cgroup")
PARENT = "virtbench"
# v1 controllers we use; each maps to the hierarchy it is mounted in (may be co-mounted).
V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "blkio", "pids")
V2_CONTROLLERS = ("cpu", "cpuset", "memory", "io", "pids")


def version() -> str:
    """'v1' (legacy or hybrid), 'v2' (unified) or 'none'."""
    return hostinfo.cgroup_version()


def v1_hierarchies(mountinfo: str) -> list[tuple[Path, set[str]]]:
    """(mount point, options) of every v1 hierarchy, from /proc/self/mountinfo text."""
    found = []
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        if not sep:
            continue
        fields, tail = pre.split(), post.split()
        if len(tail) >= 3 and tail[0] == "cgroup":
            found.append((Path(fields[4]), set(tail[2].split(","))))
    return found


def hybrid_v2_mounts(mountinfo: str) -> list[Path]:
    """cgroup2 mount points beside v1 hierarchies (e.g. /sys/fs/cgroup/unified)."""
    found = []
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        if sep and post.split()[:1] == ["cgroup2"]:
            found.append(Path(pre.split()[4]))
    return found


def parse_v1_mounts(mountinfo: str) -> dict[str, Path]:
    """controller -> mount point of its v1 hierarchy (co-mounted ones share a path)."""
    result: dict[str, Path] = {}
    for mount, options in v1_hierarchies(mountinfo):
        for ctrl in V1_CONTROLLERS:
            if ctrl in options:
                result.setdefault(ctrl, mount)
    return result


def parse_kv(text: str) -> dict[str, int]:
    """`key value` lines (cpu.stat, memory.stat, memory.events) -> dict of ints."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


@dataclass
class Layout:
    """Where the hierarchies are: v2 has one root; v1 one mount per controller."""

    version: str
    v2_root: Path | None = None
    v1_mounts: dict[str, Path] | None = None
    # every v1 hierarchy (devices, freezer, hugetlb, name=systemd...): OCI runtimes create
    # their group in all of them, so teardown and cleanup must look there too
    v1_others: list[Path] | None = None

    @classmethod
    def detect(cls, root: Path = ROOT) -> Layout:
        if (root / "cgroup.controllers").exists():
            return cls("v2", v2_root=root)
        try:
            text = Path("/proc/self/mountinfo").read_text()
        except OSError:
            text = ""
        mounts = parse_v1_mounts(text)
        if not mounts:
            raise PlatformError(f"no cgroup hierarchy found under {root}: is cgroupfs mounted?")
        used = set(mounts.values())
        others = [m for m, _ in v1_hierarchies(text) if m not in used]
        # hybrid hosts: crun also makes the group in the empty cgroup2 mount (unified)
        others += hybrid_v2_mounts(text)
        return cls("v1", v1_mounts=mounts, v1_others=others)

    def parent_dirs(self) -> dict[str, Path]:
        """controller -> the `virtbench` parent directory in its hierarchy."""
        if self.version == "v2":
            assert self.v2_root is not None
            return {"unified": self.v2_root / PARENT}
        assert self.v1_mounts is not None
        return {c: m / PARENT for c, m in self.v1_mounts.items()}

    def other_parent_dirs(self) -> list[Path]:
        """`virtbench` parents in hierarchies we do not manage but runtimes populate."""
        return [m / PARENT for m in self.v1_others or []]


def write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise PlatformError(f"cannot write {value!r} to {path}: {exc.strerror or exc}") from exc


def read(path: Path) -> str:
    return path.read_text().strip()


def safe_read(path: Path) -> str:
    try:
        return read(path)
    except OSError:
        return ""


def walk_files(base: Path, fname: str) -> list[Path]:
    """Every `fname` in `base` and the groups nested in it."""
    if not base.is_dir():
        return []
    return [Path(root) / fname for root, _dirs, files in os.walk(base) if fname in files]
