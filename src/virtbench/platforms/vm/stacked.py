"""container@vm: an OCI container run *inside* a guest, entirely through the guest's exec.

The guest holds the same root filesystem as the host's container image (one debootstrap tree,
crun included), so the container's root is an overlayfs over a bind mount of the guest's own
root, with its upper layer on the VM's disk; `storage = "volume"` bind-mounts a guest
directory at the data path instead. The OCI config comes from the container platform's pure
spec builder, so it is the same container as on the host - only one layer deeper (seed 000's
HVMCON/PVMCON, seed 004's vm.aufs). The container shares the guest's network namespace.
"""

from __future__ import annotations

import base64
import contextlib
import json
from pathlib import PurePosixPath
from typing import Any

from ...errors import PlatformError
from ..base import Accounting, ExecResult, Platform, Process

GUEST_ROOT = "/var/lib/vb-containers"  # inside the guest, on the VM's disk
RUNTIMES_IN_GUEST = ("crun", "runc")


class StackedContainer(Platform):
    kind = "container"
    description = "an OCI container inside another platform (container@vm), via its exec"

    def __init__(self, spec, instance: str, host: Platform) -> None:
        from ..container import platform as cp
        from ..container import runtimes

        self.options_schema = cp.ContainerPlatform.options_schema  # same options as on the host
        super().__init__(spec, instance, host)
        self.host: Platform = host
        o = self.options
        if o["runtime"] not in RUNTIMES_IN_GUEST:
            raise PlatformError(
                f"platform '{spec.name}': runtime = {o['runtime']!r} cannot run inside "
                f"'{host.name}'; allowed inside a VM: {', '.join(RUNTIMES_IN_GUEST)}"
            )
        if o["network"] != "host":
            raise PlatformError(
                f"platform '{spec.name}': network = {o['network']!r} is not supported inside "
                f"'{host.name}'; allowed: \"host\" (the guest's network, reached at the VM's "
                "endpoint)"
            )
        self.resources = cp.resources_from(o)
        self.runtime = runtimes.get(o["runtime"], "host")
        self.dir = f"{GUEST_ROOT}/{instance}"
        self._started = False

    # --- helpers ------------------------------------------------------------------------
    def _sh(self, script: str, *args: str, timeout: float = 120, what: str = "") -> ExecResult:
        r = self.host.exec(["sh", "-c", script, "sh", *args], timeout=timeout)
        if not r.ok:
            tail = (r.stderr or r.stdout).strip()[-600:]
            raise PlatformError(f"{self.name} in {self.host.name}: {what} failed: {tail}")
        return r

    def _config(self) -> dict[str, Any]:
        from ..container import spec as oci
        from ..container.storage import DATA_PATH

        binds = (
            [oci.Bind(f"{self.dir}/volume", DATA_PATH)]
            if self.options["storage"] == "volume"
            else []
        )
        return oci.build(
            oci.ContainerSpec(
                args=["sleep", "infinity"],
                rootfs=f"{self.dir}/rootfs",
                hostname=self.instance,
                cgroups_path=f"/virtbench/{self.instance}",
                netns=None,  # the guest's network namespace
                binds=binds,
                resources=self.resources,
                nofile=1024,
            )
        )

    # --- lifecycle ----------------------------------------------------------------------
    def provision(self) -> None:
        from ..container.storage import DATA_PATH

        binary = self.runtime.binary
        self._sh(f"command -v {binary}", what=f"finding {binary} in the guest image")
        d = self.dir
        self._sh(
            'set -e; d="$1"\n'
            'mkdir -p "$d/lower" "$d/upper" "$d/work" "$d/rootfs" "$d/volume" "$2"\n'
            'mount --bind / "$d/lower"\n'
            'mount -t overlay overlay -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" '
            '"$d/rootfs"\n'
            'mkdir -p "$d/rootfs$3"',
            d,
            str(self.runtime.root),
            DATA_PATH,
            what="preparing the container's root filesystem",
        )
        blob = base64.b64encode(json.dumps(self._config()).encode()).decode()
        self._sh(
            'printf %s "$1" | base64 -d > "$2/config.json"', blob, d, what="writing config.json"
        )
        run = self.runtime.run_argv(self.instance, PurePosixPath(d), detach=True)  # type: ignore[arg-type]
        # the detached init would hold the agent's output pipes open: log to a file instead
        self._sh(
            'd="$1"; shift; exec "$@" > "$d/init.log" 2>&1 < /dev/null',
            d,
            *run,
            what=f"{binary} run",
        )
        self._started = True

    def teardown(self) -> None:
        with contextlib.suppress(Exception):  # the guest may already be gone
            base = " ".join(self.runtime.base())
            self.host.exec(
                [
                    "sh",
                    "-c",
                    f'{base} kill "$1" KILL; {base} delete --force "$1"; '
                    'umount -l "$2/rootfs"; umount -l "$2/lower"; rm -rf "$2"',
                    "sh",
                    self.instance,
                    self.dir,
                ],
                timeout=60,
            )
        self._started = False

    # --- running things -----------------------------------------------------------------
    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        full = self.runtime.exec_argv(self.instance, list(argv), env, None)
        r = self.host.exec(full, cpus=cpus, timeout=timeout)
        r.argv = list(argv)  # report the workload's command, not the runtime wrapper
        return r

    def spawn(self, argv, *, cpus=None, env=None) -> Process:
        return self.host.spawn(
            self.runtime.exec_argv(self.instance, list(argv), env, None), cpus=cpus
        )

    def endpoint(self, port: int) -> tuple[str, int]:
        return self.host.endpoint(port)  # shares the guest's network namespace

    @property
    def workdir(self) -> str:
        from ..container.storage import DATA_PATH

        return DATA_PATH

    def accounting(self) -> Accounting:
        acct = self.host.accounting()  # on the host, the container's cost is the VM's
        acct.extra = {**acct.extra, "container_id": self.instance, "stacked_on": self.host.name}
        return acct

    def labels(self) -> dict[str, Any]:
        host_labels = self.host.labels()
        return {
            **super().labels(),
            "stacked_on": self.host.name,
            "host_platform_type": self.host.kind,
            **{f"host_{k}": host_labels[k] for k in ("accel_used", "boot_s") if k in host_labels},
        }
