"""VM lifecycle test cases (seed 003 §4.4): boot, shutdown and disk image creation times.

Each boots or builds a *fresh sibling* of the VM platform under test (same options), so the
figures cover a cold instance while the target VM keeps running beside it, as in the seed's
"start new instances on demand next to a running guest". They measure VM platforms only.
"""

from __future__ import annotations

import secrets
import shutil
import time
from typing import Any

from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import NAME_PREFIX, Platform
from .base import Metric, Param, RunContext, Sample, Workload
from .registry import register


def _require_vm(w: Workload, platform: Platform) -> None:
    if platform.kind != "vm":
        raise WorkloadError(
            f"{w.name} measures VM platforms only; platform '{platform.name}' is "
            f"'{platform.kind}' (use the lifecycle suite's container-startup for others)"
        )


def _sibling(platform: Platform) -> Any:
    """A new, not yet provisioned VM with the target's spec (its own instance name)."""
    return type(platform)(platform.spec, NAME_PREFIX + secrets.token_hex(3), host=platform.host)


def _boot_sibling(w: Workload, platform: Platform) -> tuple[Any, float]:
    vm = _sibling(platform)
    t0 = time.monotonic()
    try:
        vm.provision()
    except VirtbenchError as exc:
        vm.teardown()
        raise WorkloadError(f"{w.name}: the fresh VM did not boot: {exc}") from exc
    except BaseException:
        vm.teardown()
        raise
    return vm, time.monotonic() - t0


@register
class VmBoot(Workload):
    suite = "lifecycle"
    name = "vm-boot"
    description = "fresh VM: QEMU start -> guest agent answers (boot_s); whole provision too"
    metrics = (
        Metric("boot_s", "s", False, primary=True),
        Metric("provision_s", "s", False),
        Metric("qmp_ready_s", "s", False),
    )

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        _require_vm(self, platform)
        vm, provision_s = _boot_sibling(self, platform)
        try:
            t = vm.machine.timings
            labels = {"accel_used": vm.accel_used, "vcpus": vm.options["vcpus"]}
            return [
                self.sample("boot_s", t["boot_s"], **labels),
                self.sample("provision_s", provision_s, **labels),
                self.sample("qmp_ready_s", t["qmp_s"], **labels),
            ]
        finally:
            vm.teardown()


@register
class VmShutdown(Workload):
    suite = "lifecycle"
    name = "vm-shutdown"
    description = "fresh VM: guest poweroff request -> QEMU exited; then host-side teardown"
    metrics = (Metric("shutdown_s", "s", False, primary=True), Metric("teardown_s", "s", False))

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        _require_vm(self, platform)
        vm, _ = _boot_sibling(self, platform)
        try:
            try:
                shutdown_s = vm.shutdown(timeout=ctx.timeout or 60)
            except VirtbenchError as exc:
                raise WorkloadError(f"{self.name}: {exc}") from exc
        finally:
            t0 = time.monotonic()
            vm.teardown()
            teardown_s = time.monotonic() - t0
        labels = {"accel_used": vm.accel_used}
        return [
            self.sample("shutdown_s", shutdown_s, **labels),
            self.sample("teardown_s", teardown_s, **labels),
        ]


@register
class VmImageCreate(Workload):
    suite = "lifecycle"
    name = "vm-image-create"
    dimension_labels = ("disk_gb",)
    description = (
        "create a new VM's own root disk of 1/2/4 GiB: allocate it, then mkfs.ext4 -d the "
        "shared root tree into it (seed 003: creation time grows with disk size)"
    )
    tools = ()
    host_tools = ("mkfs.ext4", "qemu-img")
    metrics = (Metric("create_s", "s", False, primary=True),)
    params = {
        "disk_sizes_gb": Param([1, 2, 4], "disk sizes to create, GiB", min=1, max=64),
        "preallocation": Param(
            "full",
            "full: write every block (like a fresh disk file); falloc: reserve only; off: sparse",
            choices=("full", "falloc", "off"),
        ),
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        _require_vm(self, platform)
        from ..platforms.vm import image, paths

        sizes = ctx.params["disk_sizes_gb"]
        sizes = sizes if isinstance(sizes, list) else [sizes]
        prealloc = ctx.params["preallocation"]
        tree, _key = image.rootfs(ctx.log)
        scratch = paths.run_dir() / f"{platform.instance}-img"
        scratch.mkdir(parents=True, exist_ok=True)
        samples = []
        try:
            for gb in sizes:
                target = scratch / f"disk-{gb}g.img"
                t0 = time.monotonic()
                try:
                    image.create_disk(tree, target, int(gb), prealloc)
                except VirtbenchError as exc:
                    raise WorkloadError(f"{self.name}: {exc}") from exc
                took = time.monotonic() - t0
                target.unlink(missing_ok=True)  # free the space before the next size
                samples.append(
                    self.sample("create_s", took, disk_gb=int(gb), preallocation=prealloc)
                )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return samples
