"""podman as a container engine (`runtime = "podman"`), driven through its command line.

podman takes no OCI bundle, so the bundle's config.json (the same one crun and runc get) is
translated into `podman run` flags: the root filesystem is our own overlay over the shared
image (`--rootfs`, so binaries are identical to every other platform), the network is the
host's or the netns virtbench made, limits and real-time bandwidth go on a cgroup nested in
the container's vb- group (`--cgroup-parent`). podman keeps its state under virtbench's own
roots, away from the user's podman containers. Rootful podman on hosts without
CAP_SYS_RESOURCE (HOST-NOTES) needs ulimits it may set: we pass the ones we hold.
"""

from __future__ import annotations

import contextlib
import json
import resource
import subprocess
from pathlib import Path
from typing import Any

from ... import tools
from ..base import NAME_PREFIX
from .runtimes import STATE_ROOT, OciRuntime

STORAGE_ROOT = Path("/var/lib/virtbench/podman")
RUN_ROOT = STATE_ROOT / "podman"
# podman's default set lacks these; crun/runc containers get them from spec.CAPABILITIES
EXTRA_CAPS = ("SYS_NICE", "IPC_LOCK")
PID_DIR = "/.vb-pids"  # inside the container: where exec'd commands write their pid
PODMAN_NPROC = 32768  # the RLIMIT_NPROC podman gives conmon (measured, podman 4.3)


def run_flags(config: dict[str, Any], network: bool = True) -> list[str]:
    """`podman run` flags equivalent to an OCI config.json (pure: unit-tested); also Docker's,
    whose flags have the same names (`network=False`: the engine makes its own network)."""
    linux = config.get("linux", {})
    proc = config.get("process", {})
    flags = ["--hostname", config.get("hostname", "")]
    flags += ["--cgroup-parent", linux.get("cgroupsPath", "/virtbench")]
    netns = next((n for n in linux.get("namespaces", []) if n["type"] == "network"), None)
    if network:
        flags += ["--network", f"ns:{netns['path']}" if netns and netns.get("path") else "host"]
    for m in config.get("mounts", []):
        if m.get("type") == "bind":
            ro = "ro" if "ro" in m.get("options", []) else "rw"
            flags += ["--volume", f"{m['source']}:{m['destination']}:{ro}"]
    res = linux.get("resources", {})
    cpu = res.get("cpu", {})
    for key, flag in (
        ("shares", "--cpu-shares"),
        ("quota", "--cpu-quota"),
        ("period", "--cpu-period"),
        ("cpus", "--cpuset-cpus"),
        ("realtimeRuntime", "--cpu-rt-runtime"),
        ("realtimePeriod", "--cpu-rt-period"),
    ):
        if cpu.get(key) is not None:
            flags += [flag, str(cpu[key])]
    if "memory" in res:
        flags += ["--memory", str(res["memory"]["limit"])]
        flags += ["--memory-swap", str(res["memory"].get("swap", res["memory"]["limit"]))]
    if "pids" in res:
        flags += ["--pids-limit", str(res["pids"]["limit"])]
    for cap in EXTRA_CAPS:
        flags += ["--cap-add", cap]
    for rl in proc.get("rlimits", []):
        if rl["type"] == "RLIMIT_NOFILE":
            flags += ["--ulimit", f"nofile={rl['soft']}:{rl['hard']}"]
    # podman's own default (4194304) needs CAP_SYS_RESOURCE; podman runs conmon with at most
    # PODMAN_NPROC, so ask for no more than that or what we hold
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nproc = PODMAN_NPROC if nproc == resource.RLIM_INFINITY else min(nproc, PODMAN_NPROC)
    flags += ["--ulimit", f"nproc={nproc}:{nproc}"]
    for env in proc.get("env", []):
        flags += ["--env", env]
    if proc.get("cwd"):
        flags += ["--workdir", proc["cwd"]]
    return flags


class Podman(OciRuntime):
    """podman run/exec/rm; `--pid-file` of exec'd commands is emulated (see exec_argv)."""

    name = binary = "podman"
    # pids in exec pid files are the container's own (podman exec has no --pid-file)
    pid_files_in_container = True

    def base(self) -> list[str]:
        return [
            self.binary,
            "--root",
            str(STORAGE_ROOT / "storage"),
            "--runroot",
            str(RUN_ROOT / "run"),
            "--tmpdir",
            str(RUN_ROOT / "tmp"),
            "--cgroup-manager",
            "cgroupfs",  # no systemd here (HOST-NOTES); also what we manage ourselves
            "--events-backend",
            "none",
            "--runtime",
            "crun",
        ]

    def prepare(self) -> None:
        tools.require([self.binary], needed_by='runtime = "podman"')
        tools.require(["crun"], needed_by='runtime = "podman"')
        from .runtimes import ensure_hybrid_hugetlb

        ensure_hybrid_hugetlb()  # podman runs crun, which needs it on hybrid hosts
        for d in (STORAGE_ROOT, RUN_ROOT):
            d.mkdir(parents=True, exist_ok=True)

    def run_argv(self, cid: str, bundle: Path, detach: bool) -> list[str]:
        config = json.loads((bundle / "config.json").read_text())
        pids = bundle / "pids"
        pids.mkdir(exist_ok=True)
        return [
            *self.base(),
            "run",
            *(["--detach"] if detach else []),
            "--name",
            cid,
            "--log-driver",
            "none",
            *run_flags(config),
            "--volume",
            f"{pids}:{PID_DIR}:rw",
            # with --rootfs the first positional is the root path; nothing may follow it
            # but the command (podman run stops parsing flags there)
            "--rootfs",
            config["root"]["path"],
            *config["process"]["args"],
        ]

    def exec_argv(
        self, cid: str, argv: list[str], env: dict[str, str] | None, pid_file: str | None
    ) -> list[str]:
        return [*self.exec_prefix(env), cid, *pid_wrapped(argv, pid_file)]

    def host_pid_file(self, pid_file: str) -> str:
        """Where the wrapper's pid file appears on the host (the bundle's pids/ dir)."""
        p = Path(pid_file)
        return str(p.parent / "pids" / p.name)

    def state(self, cid: str) -> dict:
        r = subprocess.run(
            [*self.base(), "inspect", "--format", "{{.State.Pid}}", cid],
            capture_output=True,
            text=True,
        )
        pid = r.stdout.strip()
        return {"pid": int(pid)} if r.returncode == 0 and pid.isdigit() and pid != "0" else {}

    def delete(self, cid: str) -> None:
        subprocess.run(
            [*self.base(), "rm", "--force", "--time", "0", cid], capture_output=True, timeout=60
        )

    def list_ids(self) -> list[str]:
        if tools.which(self.binary) is None or not STORAGE_ROOT.is_dir():
            return []
        r = subprocess.run(
            [*self.base(), "ps", "--all", "--format", "{{.Names}}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return sorted(n for n in r.stdout.split() if n.startswith(NAME_PREFIX))


def pid_wrapped(argv: list[str], pid_file: str | None) -> list[str]:
    """argv run so that it records its own (container) pid in PID_DIR where the host can
    read it: for engines whose exec has no --pid-file (podman, lxc-attach)."""
    if not pid_file:
        return list(argv)
    wrap = f'echo $$ > {PID_DIR}/{Path(pid_file).name}; exec "$@"'
    return ["sh", "-c", wrap, "sh", *argv]


def host_pid(container_pid: int, candidates: list[int]) -> int | None:
    """The host pid of a process known by its pid in the container's namespace: the last
    NSpid field of /proc/<host pid>/status is the innermost namespace's pid."""
    for pid in candidates:
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("NSpid:"):
                    fields = line.split()[1:]
                    if len(fields) > 1 and int(fields[-1]) == container_pid:
                        return pid
    return None
