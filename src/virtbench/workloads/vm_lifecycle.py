"""VM lifecycle test cases (seed 003 §4.4): boot, shutdown and disk image creation times.

Each boots or builds a *fresh sibling* of the VM platform under test (same options), so the
figures cover a cold instance while the target VM keeps running beside it, as in the seed's
"start new instances on demand next to a running guest". They measure VM platforms only.
"""

from __future__ import annotations

import time

from .. import labelkeys, suites
from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import Platform
from ..platforms.capabilities import DiskImages, FreshBoot, require
from .base import Metric, Param, RunContext, Sample, Workload
from .registry import register

OTHERS = " (use the lifecycle suite's container-startup for others)"


def _boot_sibling(w: Workload, platform: Platform) -> tuple[FreshBoot, float]:
    """A fresh sibling of the platform under test, booted; and the seconds provision took."""
    vm = require(platform, FreshBoot, w.name, OTHERS, error=WorkloadError).fresh_sibling()
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
    suite = suites.LIFECYCLE
    name = "vm-boot"
    description = "fresh VM: QEMU start -> guest agent answers (boot_s); whole provision too"
    metrics = (
        Metric("boot_s", "s", False, primary=True),
        Metric("provision_s", "s", False),
        Metric("qmp_ready_s", "s", False),
    )

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        vm, provision_s = _boot_sibling(self, platform)
        try:
            t = vm.boot_phases()
            return [
                self.sample("boot_s", t.boot_s, **t.labels),
                self.sample("provision_s", provision_s, **t.labels),
                self.sample("qmp_ready_s", t.control_s, **t.labels),
            ]
        finally:
            vm.teardown()


@register
class VmShutdown(Workload):
    suite = suites.LIFECYCLE
    name = "vm-shutdown"
    description = "fresh VM: guest poweroff request -> QEMU exited; then host-side teardown"
    metrics = (Metric("shutdown_s", "s", False, primary=True), Metric("teardown_s", "s", False))

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        vm, _ = _boot_sibling(self, platform)
        try:
            labels = {labelkeys.ACCEL_USED: vm.boot_phases().labels[labelkeys.ACCEL_USED]}
            try:
                shutdown_s = vm.shutdown(timeout=ctx.timeout or 60)
            except VirtbenchError as exc:
                raise WorkloadError(f"{self.name}: {exc}") from exc
        finally:
            t0 = time.monotonic()
            vm.teardown()
            teardown_s = time.monotonic() - t0
        return [
            self.sample("shutdown_s", shutdown_s, **labels),
            self.sample("teardown_s", teardown_s, **labels),
        ]


@register
class VmImageCreate(Workload):
    suite = suites.LIFECYCLE
    name = "vm-image-create"
    dimension_labels = (labelkeys.DISK_GB,)
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
        images = require(platform, DiskImages, self.name, OTHERS, error=WorkloadError)
        sizes = ctx.params["disk_sizes_gb"]
        sizes = sizes if isinstance(sizes, list) else [sizes]
        prealloc = ctx.params["preallocation"]
        samples = []
        with images.disk_images(ctx.log) as create:
            for gb in sizes:
                try:
                    took = create(int(gb), prealloc)
                except VirtbenchError as exc:
                    raise WorkloadError(f"{self.name}: {exc}") from exc
                samples.append(
                    self.sample(
                        "create_s",
                        took,
                        **{labelkeys.DISK_GB: int(gb), labelkeys.PREALLOCATION: prealloc},
                    )
                )
        return samples
