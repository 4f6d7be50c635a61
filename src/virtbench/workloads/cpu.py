"""CPU suite: sysbench cpu (1 thread and all cores), stress-ng CPU stressors, LINPACK via hpcc."""

from __future__ import annotations

import os
import re
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from ..errors import WorkloadError
from ..platforms.base import NAME_PREFIX, Platform
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register

_EPS = re.compile(r"events per second:\s*([\d.]+)")


class _SysbenchCpu(Workload):
    suite = "cpu"
    tools = ("sysbench",)
    metrics = (Metric("events_per_s", "events/s", True, primary=True),)
    params = {
        "duration": Param(5, "seconds per run", min=1, max=3600),
        "max_prime": Param(20000, "sysbench --cpu-max-prime", min=100, max=10_000_000),
    }

    def threads(self, ctx: RunContext) -> int:
        raise NotImplementedError

    def command(self, ctx, platform):
        p = ctx.params
        return [
            "sysbench",
            "cpu",
            f"--threads={self.threads(ctx)}",
            f"--time={p['duration']}",
            f"--cpu-max-prime={p['max_prime']}",
            "run",
        ]

    def parse(self, result, ctx):
        m = _EPS.search(result.stdout)
        if not m:
            raise WorkloadError(f"{self.name}: no 'events per second' in sysbench output")
        return [self.sample("events_per_s", float(m.group(1)), threads=self.threads(ctx))]


@register
class SysbenchCpu1(_SysbenchCpu):
    name = "sysbench-cpu-1t"
    description = "sysbench cpu prime search, 1 thread: single-core throughput"

    def threads(self, ctx):
        return 1


@register
class SysbenchCpuAll(_SysbenchCpu):
    name = "sysbench-cpu-all"
    description = "sysbench cpu prime search, one thread per available CPU"

    _online: int | None = None  # CPUs the environment itself sees (a VM's vCPUs)

    def threads(self, ctx):
        if ctx.cpus:
            return len(ctx.cpus)
        return self._online or os.cpu_count() or 1

    def run(self, platform, ctx):
        # ask the environment, not the host: a 1-vCPU guest must not run 2 threads
        if not ctx.cpus:
            r = platform.exec(["nproc"], timeout=30)
            if r.ok and r.stdout.strip().isdigit():
                self._online = int(r.stdout.strip())
        return super().run(platform, ctx)


# --- helpers for workloads that leave files in the environment --------------------------------


class _Deadline:
    """The cell timeout shared by the several commands of one multi-step workload."""

    def __init__(self, timeout: float | None) -> None:
        self.end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        return None if self.end is None else max(1.0, self.end - time.monotonic())


def _scratch_dir(platform: Platform, what: str) -> str:
    """A fresh vb- directory under the platform's workdir (removed by the caller)."""
    path = f"{platform.workdir.rstrip('/')}/{NAME_PREFIX}{what}-{secrets.token_hex(3)}"
    check(platform.exec(["mkdir", "-p", path], timeout=30), f"mkdir {path}")
    return path


def _read_file(platform: Platform, path: str, what: str) -> str:
    result = platform.exec(["cat", path], timeout=30)
    check(result, f"{what}: reading {path}")
    return result.stdout


def _remove(platform: Platform, path: str) -> None:
    # best effort: a failure here must not hide the measurement or the original error
    platform.exec(["rm", "-rf", "--", path], timeout=60)


# --- stress-ng -------------------------------------------------------------------------------


def parse_stress_ng_yaml(text: str, stressor: str, what: str) -> dict[str, float]:
    """The metrics entry for `stressor` from a `stress-ng --yaml FILE` document."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorkloadError(f"{what}: stress-ng YAML does not parse: {exc}") from exc
    entries = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise WorkloadError(f"{what}: no 'metrics' list in stress-ng YAML")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("stressor") == stressor:
            try:
                return {k: float(v) for k, v in entry.items() if k != "stressor" and v is not None}
            except (TypeError, ValueError) as exc:
                raise WorkloadError(f"{what}: non-numeric stress-ng metric: {exc}") from exc
    raise WorkloadError(f"{what}: stressor '{stressor}' missing from stress-ng YAML metrics")


class _StressNg(Workload):
    suite = "cpu"
    tools = ("stress-ng",)
    metrics = (
        Metric("bogo_ops_per_s", "bogo-ops/s", True, primary=True),  # real (wall) time
        Metric("bogo_ops_per_cpu_s", "bogo-ops/s", True),  # per usr+sys CPU second
    )
    params = {
        "duration": Param(5, "seconds per run", min=1, max=3600),
        "workers": Param(1, "stress-ng instances; 0 = one per CPU", min=0, max=1024),
    }
    stressor: str  # the stress-ng stressor (its YAML 'stressor' key)
    extra_args: tuple[str, ...] = ()

    def workers(self, ctx: RunContext) -> int:
        n = int(ctx.params["workers"])
        if n > 0:
            return n
        # -1: stress-ng counts the online CPUs of the environment it runs in (a VM's vCPUs)
        return len(ctx.cpus) if ctx.cpus else -1

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = _Deadline(ctx.timeout)
        workdir = _scratch_dir(platform, "stress-ng")
        report = f"{workdir}/metrics.yaml"
        argv = [
            "stress-ng",
            f"--{self.stressor}",
            str(self.workers(ctx)),
            *self.extra_args,
            "--timeout",
            f"{ctx.params['duration']}s",
            "--metrics-brief",
            "--temp-path",
            workdir,
            "--yaml",
            report,
        ]
        try:
            check(platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left()), self.name)
            text = _read_file(platform, report, self.name)
        finally:
            _remove(platform, workdir)
        return self.parse_yaml(text, ctx)

    def parse_yaml(self, text: str, ctx: RunContext) -> list[Sample]:
        m = parse_stress_ng_yaml(text, self.stressor, self.name)
        for key in ("bogo-ops-per-second-real-time", "bogo-ops-per-second-usr-sys-time"):
            if key not in m:
                raise WorkloadError(f"{self.name}: '{key}' missing from stress-ng YAML")
        n = self.workers(ctx)
        labels: dict[str, Any] = {
            "stressor": self.stressor,
            "workers": n if n > 0 else "all-online",
            "bogo_ops": m.get("bogo-ops"),
            "wall_s": m.get("wall-clock-time"),
        }
        if self.extra_args:
            labels["args"] = " ".join(self.extra_args)
        samples = [
            self.sample("bogo_ops_per_s", m["bogo-ops-per-second-real-time"], **labels),
            self.sample("bogo_ops_per_cpu_s", m["bogo-ops-per-second-usr-sys-time"], **labels),
        ]
        # a handful of bogo-ops cannot give a rate to better than a few percent: say so
        if m.get("bogo-ops", 0) < 10:
            for s in samples:
                s.labels["invalid"] = f"only {m.get('bogo-ops', 0):.0f} bogo-ops: run longer"
        return samples


@register
class StressNgMatrixprod(_StressNg):
    name = "stress-ng-cpu-matrixprod"
    description = "stress-ng cpu, method matrixprod: floating point matrix product, cache heavy"
    stressor = "cpu"
    extra_args = ("--cpu-method", "matrixprod")


@register
class StressNgInt64(_StressNg):
    name = "stress-ng-cpu-int64"
    description = "stress-ng cpu, method int64: 64-bit integer ALU operations"
    stressor = "cpu"
    extra_args = ("--cpu-method", "int64")


@register
class StressNgQsort(_StressNg):
    name = "stress-ng-qsort"
    description = "stress-ng qsort: sorting 32-bit integers, branchy and memory bound"
    stressor = "qsort"


# --- LINPACK (HPL) through hpcc ----------------------------------------------------------------

# hpccinf.txt, from Debian's /usr/share/doc/hpcc/examples/_hpccinf.txt with one problem size and
# a 1 x 1 process grid: hpcc runs as a single process (no MPI launcher), so it works unchanged
# in containers and VMs. Lines 33-36 (PTRANS) ask for no extra sizes.
_HPCCINF = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}          Ns
1            # of NBs
{nb}         NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
1            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""

_SUMMARY = re.compile(r"Begin of Summary section\.\n(.*?)\nEnd of Summary section\.", re.S)


def hpcc_input(n: int, nb: int) -> str:
    return _HPCCINF.format(n=n, nb=nb)


def parse_hpcc_summary(text: str, what: str) -> dict[str, str]:
    """The key=value pairs of the Summary section of hpccoutf.txt."""
    m = _SUMMARY.search(text)
    if not m:
        raise WorkloadError(f"{what}: no Summary section in hpccoutf.txt (hpcc did not finish?)")
    out: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


@register
class HpccLinpack(Workload):
    suite = "cpu"
    name = "hpcc-linpack"
    description = (
        "LINPACK (HPL) GFLOPS from the HPC Challenge suite, one process with the system BLAS;"
        " DGEMM, STREAM triad, RandomAccess and FFT come from the same run"
    )
    tools = ("hpcc",)
    metrics = (
        Metric("hpl_gflops", "GFLOPS", True, primary=True),
        Metric("dgemm_gflops", "GFLOPS", True),
        Metric("stream_triad_gbs", "GB/s", True),
        Metric("random_access_gups", "GUP/s", True),
        Metric("fft_gflops", "GFLOPS", True),
    )
    params = {
        "n": Param(
            3000, "HPL problem size N (8*N^2 bytes; time grows as N^3)", min=100, max=100_000
        ),
        "nb": Param(80, "HPL block size NB", min=1, max=1024),
    }
    # hpcc summary key -> (metric, scale to the metric's unit)
    _KEYS = {
        "HPL_Tflops": ("hpl_gflops", 1000.0),
        "SingleDGEMM_Gflops": ("dgemm_gflops", 1.0),
        "SingleSTREAM_Triad": ("stream_triad_gbs", 1.0),
        "SingleRandomAccess_GUPs": ("random_access_gups", 1.0),
        "SingleFFT_Gflops": ("fft_gflops", 1.0),
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = _Deadline(ctx.timeout)
        workdir = _scratch_dir(platform, "hpcc")
        try:
            # hpcc reads hpccinf.txt from, and appends hpccoutf.txt to, its working directory
            with tempfile.TemporaryDirectory(prefix=NAME_PREFIX) as tmp:
                inf = Path(tmp) / "hpccinf.txt"
                inf.write_text(hpcc_input(int(ctx.params["n"]), int(ctx.params["nb"])))
                platform.put_file(str(inf), f"{workdir}/hpccinf.txt", 0o644)
            # sh, not `env -C`: busybox env (VM guests) has no -C; the path is an argument,
            # never part of the script text
            result = platform.exec(
                ["sh", "-c", 'cd "$1" && exec hpcc', "sh", workdir],
                cpus=ctx.cpus,
                timeout=deadline.left(),
            )
            check(result, self.name)
            text = _read_file(platform, f"{workdir}/hpccoutf.txt", self.name)
        finally:
            _remove(platform, workdir)
        return self.parse_output(text)

    def parse_output(self, text: str) -> list[Sample]:
        summary = parse_hpcc_summary(text, self.name)
        labels: dict[str, Any] = {
            "n": _int_or_none(summary.get("HPL_N")),
            "nb": _int_or_none(summary.get("HPL_NB")),
            "processes": _int_or_none(summary.get("CommWorldProcs")),
            "hpl_time_s": _float_or_none(summary.get("HPL_time")),
        }
        invalid = None
        if summary.get("Success") != "1":
            invalid = "hpcc reports Success=0 (a test failed its verification)"
        elif "FAILED" in text.split("Begin of HPL section.", 1)[-1].split("End of HPL", 1)[0]:
            invalid = "HPL residual check FAILED"
        samples = []
        for key, (metric, scale) in self._KEYS.items():
            value = _float_or_none(summary.get(key))
            if value is None:
                if metric == "hpl_gflops":
                    raise WorkloadError(f"{self.name}: no {key} in hpcc Summary section")
                continue
            s = self.sample(metric, value * scale, **labels)
            if invalid:
                s.labels["invalid"] = invalid
            samples.append(s)
        return samples


def _float_or_none(v: str | None) -> float | None:
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


def _int_or_none(v: str | None) -> int | None:
    f = _float_or_none(v)
    return int(f) if f is not None else None
