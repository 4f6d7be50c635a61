"""The real tools virtbench drives, the Debian packages that provide them, and their versions."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass

from .errors import MissingToolError


@dataclass(frozen=True)
class Tool:
    name: str  # executable name on PATH
    package: str  # Debian package providing it
    version_args: tuple[str, ...] = ("--version",)
    purpose: str = ""
    optional: bool = False  # `virtbench setup` skips it; `doctor` only warns when missing
    in_image: bool = False  # its package goes into the shared root filesystem (images/rootfs.py)


# One table for every tool any platform or workload uses; `virtbench setup` installs these
# packages, `virtbench doctor` reports which are missing, and the shared root filesystem
# that containers and VMs run holds the packages of those marked `in_image`.
TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        Tool("sysbench", "sysbench", purpose="cpu and memory benchmarks", in_image=True),
        Tool("stress-ng", "stress-ng", purpose="cpu stressors, antagonists", in_image=True),
        # hpcc has no version flag: any invocation runs the whole benchmark and writes
        # hpccoutf.txt into the cwd, so its version comes from dpkg (empty version_args).
        Tool("hpcc", "hpcc", (), purpose="LINPACK (HPL) GFLOPS", in_image=True),
        Tool("mpirun", "openmpi-bin", purpose="launcher for hpcc", in_image=True),
        Tool("fio", "fio", purpose="disk benchmarks", in_image=True),
        Tool("mbw", "mbw", (), purpose="memory copy bandwidth", in_image=True),
        Tool("iperf3", "iperf3", purpose="TCP/UDP throughput", in_image=True),
        Tool(
            "sockperf",
            "sockperf",
            ("--version",),
            purpose="request/response latency",
            in_image=True,
        ),
        Tool("httperf", "httperf", purpose="open-loop web rate sweeps"),
        Tool("wrk", "wrk", ("-v",), purpose="closed-loop web load"),
        Tool("nginx", "nginx-light", ("-v",), purpose="web server under test", in_image=True),
        Tool("ffmpeg", "ffmpeg", ("-version",), purpose="conference users (publish and play RTMP)"),
        Tool("cyclictest", "rt-tests", ("--help",), purpose="timer latency", in_image=True),
        Tool("crun", "crun", purpose="OCI runtime (default)", in_image=True),
        Tool("runc", "runc", purpose="OCI runtime"),
        Tool("runsc", "runsc", ("--version",), purpose="gVisor sandboxed runtime"),
        Tool("podman", "podman", purpose="container engine (runtime = podman)", optional=True),
        Tool("debootstrap", "debootstrap", purpose="builds the shared root filesystem"),
        Tool("qemu-system-x86_64", "qemu-system-x86", purpose="VM platform"),
        Tool("qemu-img", "qemu-utils", purpose="VM disk images"),
        Tool("mkfs.ext4", "e2fsprogs", ("-V",), purpose="VM root image"),
        Tool("busybox", "busybox-static", ("--help",), purpose="VM guest init (static)"),
        Tool("ip", "iproute2", ("-V",), purpose="bridges, veths, namespaces", in_image=True),
        Tool("nft", "nftables", ("--version",), purpose="NAT port publishing", in_image=True),
        Tool("taskset", "util-linux", ("--version",), purpose="CPU pinning", in_image=True),
        Tool(
            "nsenter",
            "util-linux",
            ("--version",),
            purpose="clients in their own netns",
            in_image=True,
        ),
        Tool("cc", "gcc", purpose="builds the latency probes"),
        # java -version writes to stderr; version() reads both streams
        Tool(
            "java",
            "openjdk-17-jre-headless",
            ("-version",),
            purpose="JVM of the java suite",
            in_image=True,
        ),
        # the application suite's client (Debian's JMeter 2.13; its HTTP sampler is in
        # jmeter-http, setup_host.EXTRA_PACKAGES); no version flag that does not start a JVM
        Tool("jmeter", "jmeter", (), purpose="application suite load generator"),
        Tool("mvn", "maven", ("-v",), purpose="fetches the java suite's jars at setup"),
        Tool("clang", "clang", purpose="builds the Wasm kernels and their native twin"),
        Tool("wasm-ld", "lld", purpose="links the Wasm kernel module"),
        Tool("lxc-start", "lxc", purpose="LXC container engine (runtime = lxc)"),
        Tool("lxc-attach", "lxc", purpose="runs workloads in LXC containers"),
        # installed by setup (docker.io brings containerd and runc); virtbench starts dockerd
        Tool("dockerd", "docker.io", purpose="Docker engine (runtime = docker)", in_image=True),
    ]
}


def image_packages() -> set[str]:
    """The Debian packages of the tools the shared root filesystem holds."""
    return {t.package for t in TOOLS.values() if t.in_image}


def which(name: str) -> str | None:
    return shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")


def require(names: list[str] | tuple[str, ...], needed_by: str = "") -> None:
    """Raise MissingToolError naming the Debian package of the first missing tool."""
    for name in names:
        if which(name) is None:
            tool = TOOLS.get(name)
            raise MissingToolError(name, tool.package if tool else name, needed_by)


def missing_hint(name: str) -> str:
    """Where `name` comes from, for a command that was not found where a workload ran it
    (exit 127): the host needs its Debian package; containers and VMs run the shared image,
    whose package list holds every workload tool (TOOLS marked `in_image`)."""
    tool = TOOLS.get(name.rsplit("/", 1)[-1])
    if tool is None:
        return f"'{name}' is not installed in that environment"
    return (
        f"'{tool.name}' comes with Debian's {tool.package}: on the host `apt-get install"
        f" {tool.package}` (or `virtbench setup`); containers and VMs need the shared image"
        " built with it (`virtbench images build`)"
    )


_VERSION_RE = re.compile(r"\d+(?:\.\d+)+(?:[-+~][\w.+~-]+)?")


@functools.cache
def version(name: str) -> str | None:
    """The tool's version string as it reports it, or None if absent."""
    path = which(name)
    if path is None:
        return None
    tool = TOOLS.get(name, Tool(name, name))
    # Empty version_args: the tool has no harmless version flag; ask the package manager.
    argv = (
        [path, *tool.version_args]
        if tool.version_args
        else ["dpkg-query", "-W", "-f=${Version}", tool.package]
    )
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout or "") + (out.stderr or "")
    m = _VERSION_RE.search(text)
    return m.group(0) if m else "unknown"
