"""LXC as a container engine (`runtime = "lxc"`), driven through lxc-start/-attach/-stop.

LXC takes no OCI bundle, so the bundle's config.json (the one crun and runc get) is
translated into an LXC container config (`config_text`, pure), as podman.py translates it
into flags: the root is virtbench's own overlay over the shared image (or the same overlay
plus a bind-mounted volume), limits go into `lxc.cgroup.*` (v1) or `lxc.cgroup2.*` (v2)
keys on a payload group LXC makes inside the container's vb- group, and the network is
LXC's own veth (`lxc.net.0`) plugged into virtbench's bridge with an address from
virtbench's IPAM, or the host's (`lxc.net.0.type = none`). Workloads enter the running
container with lxc-attach.

This host (HOST-NOTES) forces two departures from a stock LXC setup, both said by
`virtbench doctor`: AppArmor is unusable, so every container runs with
`lxc.apparmor.profile = unconfined`; lxc-net (lxcbr0 + dnsmasq) does not start, so virtbench
never uses it. The lxcpath is virtbench's own (LXCPATH), away from the user's containers.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ... import cgroups, doctor_registry, hostnet, tools
from ...doctor_registry import Check
from ...errors import PlatformError
from .. import engine_config
from .podman import PID_DIR, pid_wrapped
from .runtimes import STATE_ROOT, OciRuntime

LXCPATH = STATE_ROOT / "vb-lxc"  # lxc-* -P: only virtbench's containers live here
BINARIES = ("lxc-start", "lxc-attach", "lxc-stop", "lxc-info")
LOG_LEVEL = "WARN"
APPARMOR = Path("/sys/kernel/security/apparmor")


def host_limits() -> list[str]:
    """What virtbench cannot use of LXC on this host, and what it does instead."""
    why = "not enabled in this kernel" if not APPARMOR.is_dir() else "unusable on these hosts"
    return [
        f"AppArmor is {why}: containers run with lxc.apparmor.profile = unconfined",
        "lxc-net (lxcbr0, dnsmasq) is not used (it does not start without systemd here): "
        f"bridge and nat use LXC's veth (lxc.net.0) on virtbench's bridge {hostnet.BRIDGE} "
        "with virtbench's addresses",
    ]


def _caps(config: dict[str, Any]) -> str:
    bounding = config.get("process", {}).get("capabilities", {}).get("bounding", [])
    return " ".join(c.lower().removeprefix("cap_") for c in bounding)


def cgroup_lines(resources: dict[str, Any], version: str, memsw: bool = True) -> list[str]:
    """`lxc.cgroup.*` (v1) or `lxc.cgroup2.*` (v2) lines for OCI `linux.resources`.

    Weight is on the v1 cpu.shares scale (v2: converted as crun converts it). The memory
    limit includes swap (docker -m): memsw on v1 where the kernel accounts swap, no swap on
    v2. The rt period comes before the runtime: a runtime is checked against the period."""
    cpu = resources.get("cpu", {})
    mem = resources.get("memory", {})
    pids = resources.get("pids", {})
    out: list[tuple[str, Any]] = []
    if version == "v2":
        if cpu.get("shares") is not None:
            out.append(("cpu.weight", cgroups.shares_to_weight(cpu["shares"])))
        if cpu.get("quota") is not None or cpu.get("period") is not None:
            quota = cpu.get("quota")
            out.append(
                ("cpu.max", f"{'max' if quota is None else quota} {cpu.get('period') or 100000}")
            )
        if cpu.get("cpus"):
            out.append(("cpuset.cpus", cpu["cpus"]))
        if mem.get("limit") is not None:
            out += [("memory.max", mem["limit"]), ("memory.swap.max", 0)]
        if pids.get("limit") is not None:
            out.append(("pids.max", pids["limit"]))
        return [f"lxc.cgroup2.{k} = {v}" for k, v in out]
    for oci, key in (("shares", "cpu.shares"), ("period", "cpu.cfs_period_us")):
        if cpu.get(oci) is not None:
            out.append((key, cpu[oci]))
    if cpu.get("quota") is not None:
        out.append(("cpu.cfs_quota_us", cpu["quota"]))
    if cpu.get("realtimeRuntime") is not None:
        if cpu.get("realtimePeriod") is not None:
            out.append(("cpu.rt_period_us", cpu["realtimePeriod"]))
        out.append(("cpu.rt_runtime_us", cpu["realtimeRuntime"]))
    if cpu.get("cpus"):
        out.append(("cpuset.cpus", cpu["cpus"]))
    if mem.get("limit") is not None:
        out.append(("memory.limit_in_bytes", mem["limit"]))
        if memsw:
            out.append(("memory.memsw.limit_in_bytes", mem.get("swap", mem["limit"])))
    if pids.get("limit") is not None:
        out.append(("pids.max", pids["limit"]))
    return [f"lxc.cgroup.{k} = {v}" for k, v in out]


def net_lines(network: str, net: hostnet.Attachment | None) -> list[str]:
    """lxc.net.0: the host's netns, or a veth on virtbench's bridge (never lxc-net's)."""
    if network == "host":
        return ["lxc.net.0.type = none"]
    if net is None:
        raise PlatformError(f'network = "{network}" needs an address on {hostnet.BRIDGE}')
    return [
        "lxc.net.0.type = veth",
        f"lxc.net.0.link = {hostnet.BRIDGE}",
        f"lxc.net.0.veth.pair = {net.host_if}",  # vb- name: the network cleaner finds it
        "lxc.net.0.name = eth0",
        "lxc.net.0.flags = up",
        f"lxc.net.0.ipv4.address = {net.address}/{net.prefixlen}",
        f"lxc.net.0.ipv4.gateway = {net.gateway}",
    ]


def config_text(
    config: dict[str, Any],
    *,
    network: str,
    net: hostnet.Attachment | None,
    pid_dir: Path,
    cgroup_version: str,
    memsw: bool = True,
) -> str:
    """The LXC container config for an OCI config.json dict (pure: unit-tested)."""
    linux = config.get("linux", {})
    proc = config.get("process", {})
    lines = [
        f"lxc.uts.name = {config.get('hostname', '')}",
        f"lxc.rootfs.path = dir:{config['root']['path']}",
        "lxc.apparmor.profile = unconfined",  # AppArmor is unusable on these hosts
        # LXC's own defaults for an application container: a fresh /dev, proc and sys
        # no console pty: a foreground init (the start-up test case) writes to lxc-start's
        # own stdout, as `docker run` without -t does
        "lxc.console.path = none",
        "lxc.autodev = 1",
        "lxc.mount.auto = proc:mixed sys:ro",
        "lxc.mount.entry = shm dev/shm tmpfs rw,nosuid,nodev,noexec,mode=1777,create=dir 0 0",
        f"lxc.mount.entry = {pid_dir} {PID_DIR.lstrip('/')} none bind,create=dir 0 0",
    ]
    for m in config.get("mounts", []):
        if m.get("type") == "bind":
            ro = ",ro" if "ro" in m.get("options", []) else ""
            dest = m["destination"].lstrip("/")
            lines.append(f"lxc.mount.entry = {m['source']} {dest} none rbind,create=dir{ro} 0 0")
    if caps := _caps(config):
        lines.append(f"lxc.cap.keep = {caps}")  # Docker's set, as crun and runc get it
    for rl in proc.get("rlimits", []):
        if rl["type"] == "RLIMIT_NOFILE":
            lines.append(f"lxc.prlimit.nofile = {rl['soft']}:{rl['hard']}")
    lines += [f"lxc.environment = {e}" for e in proc.get("env", [])]
    if proc.get("cwd"):
        lines.append(f"lxc.init.cwd = {proc['cwd']}")
    # the payload group goes inside the container's vb- group (which holds its rt budget)
    lines.append(f"lxc.cgroup.dir = {linux.get('cgroupsPath', '/virtbench').strip('/')}")
    lines += cgroup_lines(linux.get("resources", {}), cgroup_version, memsw)
    lines += net_lines(network, net)
    return "\n".join(lines) + "\n"


def memsw_accounted(root: Path = Path("/sys/fs/cgroup/memory")) -> bool:
    """Whether the v1 memory controller accounts swap (memory.memsw.* exists)."""
    return (root / "memory.memsw.limit_in_bytes").exists()


class Lxc(OciRuntime):
    """lxc-start / lxc-attach / lxc-stop on virtbench's own lxcpath."""

    name = "lxc"
    binary = "lxc-start"
    # lxc-attach has no --pid-file: commands record their own pid (podman's wrapper)
    pid_files_in_container = True

    def __init__(self, network: str = "host") -> None:
        super().__init__(network)
        self.net: hostnet.Attachment | None = None

    @property
    def root(self) -> Path:
        return LXCPATH

    def base(self) -> list[str]:
        return ["-P", str(self.root)]

    def prepare(self) -> None:
        tools.require(BINARIES, needed_by='runtime = "lxc"')
        self.root.mkdir(parents=True, exist_ok=True)

    def plug(self, cid: str) -> tuple[str | None, hostnet.Attachment | None]:
        """An address on virtbench's bridge for LXC's own veth (lxc.net.0); no netns."""
        if self.network == "host":
            return None, None
        address = hostnet.allocate_ip(cid)  # first: a bridge with a lease is never removed
        hostnet.ensure_bridge()
        self.net = hostnet.Attachment(cid, "", hostnet.veth_names(cid)[0], address)
        return None, self.net

    def _write_config(self, cid: str, bundle: Path) -> Path:
        pids = bundle / "pids"
        pids.mkdir(exist_ok=True)
        config = json.loads((bundle / "config.json").read_text())
        text = config_text(
            config,
            network=self.network,
            net=self.net,
            pid_dir=pids,
            cgroup_version=cgroups.version(),
            memsw=memsw_accounted(),
        )
        d = self.root / cid
        d.mkdir(parents=True, exist_ok=True)
        (d / "config").write_text(text)
        self._args = list(config["process"]["args"])
        return d

    def run_argv(self, cid: str, bundle: Path, detach: bool) -> list[str]:
        d = self._write_config(cid, bundle)
        log = d / "lxc.log"
        argv = ["lxc-start", *self.base(), "-n", cid, "-d" if detach else "-F"]
        argv += ["-o", str(log), "-l", LOG_LEVEL, "--", *self._args]
        if not detach:
            return argv  # the start-up test case: nothing between it and lxc-start
        # a daemonized start that fails says only "failed to start"; its reason is in the log.
        # One retry: on the v1 hybrid host LXC's own cgroup setup (cgfsng, lxc.pivot) failed
        # the first start of a run now and then (2 of 4 runs), and a failed start leaves
        # nothing behind; the retry is said on stderr, which the runner logs
        retry = f'echo "lxc-start failed once; retrying: $(tail -c 300 {log})" >&2; sleep 0.5'
        script = f'"$@" || {{ {retry}; "$@"; }} || {{ s=$?; cat {log} >&2; exit $s; }}'
        return ["sh", "-c", script, "sh", *argv]

    def exec_argv(
        self, cid: str, argv: list[str], env: dict[str, str] | None, pid_file: str | None
    ) -> list[str]:
        # a clean environment: the config's (lxc.environment) plus the caller's
        out = ["lxc-attach", *self.base(), "-n", cid, "--clear-env"]
        for line in _config_env(self.root / cid / "config"):
            out += ["-v", line]
        for k, v in (env or {}).items():
            out += ["-v", f"{k}={v}"]
        return [*out, "--", *pid_wrapped(argv, pid_file)]

    def host_pid_file(self, pid_file: str) -> str:
        p = Path(pid_file)
        return str(p.parent / "pids" / p.name)

    def state(self, cid: str) -> dict:
        r = subprocess.run(
            ["lxc-info", *self.base(), "-n", cid, "-p", "-H"], capture_output=True, text=True
        )
        pid = r.stdout.strip()
        return {"pid": int(pid)} if r.returncode == 0 and pid.isdigit() else {}

    def delete(self, cid: str) -> None:
        """Kill the container (its monitor removes the payload group and veth), then its
        config dir. Never lxc-destroy: it would delete the rootfs, which storage owns."""
        if tools.which("lxc-stop") is not None and (self.root / cid).is_dir():
            subprocess.run(
                ["lxc-stop", *self.base(), "-n", cid, "-k"], capture_output=True, timeout=30
            )
        shutil.rmtree(self.root / cid, ignore_errors=True)
        with contextlib.suppress(OSError):  # the lxcpath goes with its last container
            self.root.rmdir()

    def labels(self) -> dict[str, Any]:
        return {"runtime_version": tools.version("lxc-start"), "apparmor": "unconfined"}

    def engine(self, cid: str | None) -> dict[str, str]:
        # the config LXC started the container from, as written in its lxcpath
        if cid is None:
            return {}
        try:
            text = (self.root / cid / "config").read_text()
        except OSError:
            return {}
        return engine_config.lxc_config(text, tools.version("lxc-start"))


def _config_env(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except OSError:
        return []
    key = "lxc.environment = "
    return [ln[len(key) :] for ln in text.splitlines() if ln.startswith(key)]


@doctor_registry.register(80)
def doctor_check() -> Check:
    """What LXC does differently on this host (AppArmor, lxc-net), for `virtbench doctor`."""
    if tools.which("lxc-start") is None:
        return Check("lxc", "missing", "not installed (runtime = lxc)", "apt-get install lxc")
    version = tools.version("lxc-start")
    lxcbr = " (lxcbr0 absent)" if not hostnet.link_exists("lxcbr0") else ""
    return Check(
        "lxc",
        "warn",
        f"LXC {version} runs privileged containers under {LXCPATH}; "
        + "; ".join(host_limits())
        + lxcbr,
        "nothing to do: virtbench configures both; AppArmor confinement and lxc-net are not "
        "measured",
    )
