"""Build an OCI runtime-spec config.json (the bundle's config) from what a container needs.

Pure functions: no host access, so the spec is unit-tested exactly. Defaults follow Docker's
(default capability set, masked/read-only /proc paths) so results compare with `docker run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OCI_VERSION = "1.0.2"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Docker's default capabilities, plus SYS_NICE and IPC_LOCK so the latency suite can set
# real-time priorities and lock memory (cyclictest) the same way it does natively.
CAPABILITIES = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
    "CAP_SYS_NICE",
    "CAP_IPC_LOCK",
]
MASKED_PATHS = [
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/proc/scsi",
]
READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]


@dataclass
class Resources:
    """Resource controls; cpu_weight on the cgroup v1 cpu.shares scale (runtimes convert)."""

    cpu_weight: int | None = None
    cpu_quota_us: int | None = None
    cpu_period_us: int | None = None
    cpuset_cpus: list[int] | None = None
    memory_limit_bytes: int | None = None
    pids_max: int | None = None
    # real-time bandwidth (v1 RT group scheduling only; set from what the cgroup was granted)
    realtime_runtime_us: int | None = None
    realtime_period_us: int | None = None

    def to_oci(self) -> dict[str, Any]:
        cpu: dict[str, Any] = {}
        if self.cpu_weight is not None:
            cpu["shares"] = self.cpu_weight
        if self.cpu_quota_us is not None:
            cpu["quota"] = self.cpu_quota_us
        if self.cpu_period_us is not None:
            cpu["period"] = self.cpu_period_us
        if self.cpuset_cpus is not None:
            cpu["cpus"] = ",".join(str(c) for c in sorted(set(self.cpuset_cpus)))
        if self.realtime_runtime_us is not None:
            cpu["realtimeRuntime"] = self.realtime_runtime_us
            cpu["realtimePeriod"] = self.realtime_period_us
        out: dict[str, Any] = {"devices": [{"allow": False, "access": "rwm"}]}
        if cpu:
            out["cpu"] = cpu
        if self.memory_limit_bytes is not None:
            # swap limit = memory limit: no swapping past the limit, like docker -m
            out["memory"] = {
                "limit": self.memory_limit_bytes,
                "swap": self.memory_limit_bytes,
            }
        if self.pids_max is not None:
            out["pids"] = {"limit": self.pids_max}
        return out


def etc_hosts(hostname: str) -> str:
    """/etc/hosts naming the container's own hostname, as Docker writes it.

    The image has none, so glibc asks DNS for the hostname; behind NAT the resolver is
    unreachable and every lookup waits 10 s (Open MPI, hence hpcc, makes dozens of them).
    """
    return (
        f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t{hostname}\n"
    )


@dataclass
class Bind:
    source: str
    destination: str
    readonly: bool = False


@dataclass
class ContainerSpec:
    args: list[str]
    rootfs: str  # absolute path of the (merged) root filesystem
    hostname: str
    cgroups_path: str  # e.g. /virtbench/vb-1a2b3c
    # None: share the host's network namespace; "" : a new empty one; else a netns path
    netns: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"
    binds: list[Bind] = field(default_factory=list)
    resources: Resources = field(default_factory=Resources)
    nofile: int = 1024
    readonly_root: bool = False


def build(spec: ContainerSpec) -> dict[str, Any]:
    """The config.json dict for `spec`."""
    env = [PATH_ENV, "HOME=/root"] + [f"{k}={v}" for k, v in sorted(spec.env.items())]
    caps = list(CAPABILITIES)
    namespaces: list[dict[str, str]] = [
        {"type": "pid"},
        {"type": "ipc"},
        {"type": "uts"},
        {"type": "mount"},
    ]
    if spec.netns is not None:
        namespaces.insert(1, {"type": "network", **({"path": spec.netns} if spec.netns else {})})
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
        },
        {
            "destination": "/dev/shm",
            "type": "tmpfs",
            "source": "shm",
            "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
        },
        {
            "destination": "/dev/mqueue",
            "type": "mqueue",
            "source": "mqueue",
            "options": ["nosuid", "noexec", "nodev"],
        },
        {
            "destination": "/sys",
            "type": "sysfs",
            "source": "sysfs",
            "options": ["nosuid", "noexec", "nodev", "ro"],
        },
    ]
    for b in spec.binds:
        opts = ["rbind", "rprivate"] + (["ro"] if b.readonly else ["rw"])
        mounts.append(
            {"destination": b.destination, "type": "bind", "source": b.source, "options": opts}
        )
    return {
        "ociVersion": OCI_VERSION,
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": list(spec.args),
            "env": env,
            "cwd": spec.cwd,
            "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": spec.nofile, "soft": spec.nofile}],
            "noNewPrivileges": False,
        },
        "root": {"path": spec.rootfs, "readonly": spec.readonly_root},
        "hostname": spec.hostname,
        "mounts": mounts,
        "linux": {
            "cgroupsPath": spec.cgroups_path,
            "resources": spec.resources.to_oci(),
            "namespaces": namespaces,
            "maskedPaths": list(MASKED_PATHS),
            "readonlyPaths": list(READONLY_PATHS),
        },
    }
