"""Wasm suite: SciMark 2.0's kernels in C (wasm/scimark.c) built from one source as a static
native binary and as a WASI module, so native vs container vs VM vs Wasm is one axis with one
metric set (the java suite's scimark reports the same figures in the same unit).

`scimark-c` runs the native binary on any platform; `scimark-wasm` runs the module under
wasmtime, the runtime the `wasmtime` Python package in virtbench's own environment ships: on
the host (platform native) from that environment, inside containers and VMs from the copy the
shared image carries (images/wasm_runtime.py), so every platform runs the same version.
"""

from __future__ import annotations

import sys

from .. import labelkeys, pychild, suites
from ..drivers import scimark
from ..errors import WorkloadError
from ..images import wasm_runtime
from ..platforms.base import Platform
from ..wasm import build
from . import scimark_report
from .base import Metric, RunContext, Sample, Workload, check
from .registry import register
from .scratch import Deadline, remove, scratch_dir


class _Kernels(Workload):
    suite = suites.WASM
    metrics = scimark_report.METRICS
    params = scimark_report.PARAMS
    runtime: str  # label: how the kernels run

    def prefix(self, platform: Platform, path: str) -> list[str]:
        raise NotImplementedError

    def file(self) -> str:
        raise NotImplementedError

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = Deadline(ctx.timeout)
        host_file = build.build() / self.file()
        workdir = scratch_dir(platform, "scimark-c")
        try:
            path = platform.put_file(str(host_file), f"{workdir}/{self.file()}", 0o755)
            argv = [*self.prefix(platform, path), *scimark_report.args(ctx.params)]
            result = platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left())
            check(result, self.name)
        finally:
            remove(platform, workdir)
        return self.parse_output(result.stdout)

    def parse_output(self, text: str) -> list[Sample]:
        report = scimark.parse(text, self.name)
        labels = {
            labelkeys.RUNTIME: self.runtime,
            **{f"wasm_{k}": v for k, v in report.info.items()},
        }
        return scimark_report.samples(self, report, labels, self.startup(report))

    def startup(self, report: scimark.ScimarkReport) -> dict[str, float]:
        return {}


@register
class ScimarkC(_Kernels):
    name = "scimark-c"
    description = (
        "SciMark 2.0's kernels in C (clang -O2, static), the native twin of scimark-wasm:"
        " Mflops, steady state (median after the first run) and the first run"
    )
    tools = ("clang",)  # builds it on the host; the static binary needs nothing inside
    runtime = "native"

    def file(self) -> str:
        return build.NATIVE

    def prefix(self, platform, path):
        return [path]


@register
class ScimarkWasm(_Kernels):
    name = "scimark-wasm"
    description = (
        "the same SciMark kernels compiled to WASI (clang -O2 --target=wasm32-wasi) under"
        " wasmtime (Cranelift): Mflops as scimark-c, and the module's compile time"
    )
    tools = ("clang", "wasm-ld")
    metrics = (*_Kernels.metrics, Metric("startup_ms", "ms", False))
    runtime = "wasmtime"

    def file(self) -> str:
        return build.MODULE

    def prefix(self, platform, path):
        # ask the environment which runtime it has rather than guessing from its kind: the
        # image's copy (containers, VMs) or virtbench's own Python environment (the host)
        if platform.exec(wasm_runtime.probe_argv(), timeout=60).ok:
            return wasm_runtime.argv(path)
        if platform.exec(pychild.code_argv("import wasmtime"), timeout=60).ok:
            return pychild.module_argv("virtbench.wasm.run", path)  # never the cwd's
        raise WorkloadError(
            f"{self.name}: no wasmtime runtime in this environment: neither the shared image's"
            f" copy ({wasm_runtime.IMAGE_DIR}; rebuild the image with `virtbench images build`)"
            f" nor virtbench's own Python environment ({sys.executable})"
        )

    def startup(self, report):
        info = report.info
        if "compile_ms" not in info:
            return {}
        return {"startup_ms": float(info["compile_ms"]) + float(info.get("instantiate_ms", 0))}
