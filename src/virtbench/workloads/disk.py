"""Disk suite: fio sequential (1 MiB) and random (4 KiB) reads and writes, buffered and O_DIRECT,
on a file in the platform's workdir (seed 002's IOzone runs, seed 004's disk suite); and
fio-iozone, IOzone's phase sequence (write, rewrite, read, reread, random read, random write)
as fio jobs on one file, each phase labelled `phase`.

O_DIRECT that the workdir cannot honour is recorded, never silently replaced by buffered I/O:
an EINVAL from fio gives samples flagged invalid, and a filesystem that accepts O_DIRECT but
serves it from memory (tmpfs), or a platform whose layers cache it (`Platform.direct_io()`:
gVisor, a VM disk in the host page cache), gives samples labelled `direct_io = "cached:<why>"`
(and direct_honoured=false) and flagged invalid (directio.py). Every O_DIRECT sample also
carries `io_pattern` ("read 1M", "randwrite 4k"): the host device ceiling it is judged
against (ceiling/, analysis/plausibility.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .. import directio, hostfs, labelkeys, suites
from ..drivers import fio
from ..errors import WorkloadError
from ..platforms.base import NAME_PREFIX, ExecResult, Platform
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register
from .scratch import Deadline, remove, scratch_dir

# filesystems that accept O_DIRECT but keep the data in memory: the figure is not disk I/O
MEMORY_FILESYSTEMS = hostfs.MEMORY_FILESYSTEMS

_METRICS = (
    Metric("bandwidth_mib_s", "MiB/s", True),
    Metric("iops", "IO/s", True),
    Metric("clat_mean_us", "us", False),
    Metric("clat_p99_us", "us", False),
)


@dataclass(frozen=True)
class Phase:
    """One fio job of a test case: its --rw, --bs and the JSON section holding its figures."""

    rw: str
    bs: str
    op: str  # "read" or "write"
    name: str | None = None  # IOzone's phase name; None: a single-job test case


def _metrics(primary: str) -> tuple[Metric, ...]:
    """The four fio figures with `primary` as the test case's headline."""
    return tuple(replace(m, primary=m.name == primary) for m in _METRICS)


class _Fio(Workload):
    suite = suites.DISK
    tools = ("fio",)
    dimension_labels = (
        labelkeys.DIRECT,
        labelkeys.RW,
        labelkeys.IODEPTH,
        labelkeys.FILE_SIZE,
        labelkeys.FILE_SIZE_BYTES,
        labelkeys.PHASE,
    )
    # facts of how an O_DIRECT figure was made, never a result's identity
    ignored_labels = (labelkeys.DIRECT_IO, labelkeys.IO_PATTERN)
    rw: ClassVar[str]  # fio --rw
    bs: ClassVar[str]  # fio --bs
    op: ClassVar[str]  # "read" or "write": the section of fio's JSON that holds the figures
    params = {
        "size_mib": Param(256, "test file size, MiB", min=1, max=1024 * 1024),
        "runtime": Param(5, "seconds of I/O per direct mode (fio --time_based)", min=1, max=3600),
        "direct": Param([1, 0], "fio --direct values: 1 = O_DIRECT, 0 = buffered", min=0, max=1),
        "ioengine": Param("libaio", "fio --ioengine", choices=("libaio", "psync", "io_uring")),
        "iodepth": Param(16, "fio --iodepth (libaio, io_uring)", min=1, max=4096),
        # the first second's figures depend on how the queue, the host's caches and the
        # device's own state start; counting from a settled state is what makes runs agree
        "ramp_time": Param(
            1, "seconds of I/O before fio starts counting (fio --ramp_time)", min=0, max=600
        ),
    }

    time_based: ClassVar[bool] = True  # fio --time_based: I/O for `runtime` seconds
    fresh_file: ClassVar[bool] = False  # remove the file before each direct mode
    keep_cache: ClassVar[bool] = False  # True: fio does not drop the file's page cache first

    @property
    def phase(self) -> Phase:
        return Phase(self.rw, self.bs, self.op)

    def argv(
        self, ctx: RunContext, path: str, direct: int, phase: Phase | None = None
    ) -> list[str]:
        p, ph = ctx.params, phase or self.phase
        buffered = direct == 0
        # buffered writes timed until they are on the disk: one pass, then fsync, both timed
        to_disk = buffered and ph.op == "write" and bool(p.get("end_fsync", 0))
        job = fio.Job(
            name=f"{NAME_PREFIX}{self.name}",
            path=path,
            size_mib=p["size_mib"],
            rw=ph.rw,
            bs=ph.bs,
            ioengine=p["ioengine"],
            iodepth=p["iodepth"],
            runtime=p["runtime"],
            time_based=self.time_based and not to_disk,
            invalidate=not self.keep_cache,
            # a ramp inside a single pass would leave the pass's start out of its figure
            ramp_time=0 if to_disk or not self.time_based else int(p.get("ramp_time", 0)),
            end_fsync=to_disk,
            pre_read=buffered and ph.op == "read" and bool(p.get("pre_read", 0)),
        )
        return job.argv(direct)

    def jobs(self) -> tuple[Phase, ...]:
        """The fio jobs of one direct mode, in order."""
        return (self.phase,)

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        modes = _direct_modes(ctx.params["direct"], self.name)
        deadline = Deadline(ctx.timeout)
        scratch = scratch_dir(platform, "fio")
        path = f"{scratch}/fio.dat"
        try:
            fs = _fs_type(platform, scratch)
            honoured = _direct_io(platform.direct_io(), fs)
            samples: list[Sample] = []
            for direct in modes:
                if self.fresh_file:  # the first job writes a new file, not the last mode's
                    check(platform.exec(["rm", "-f", "--", path], timeout=60), f"rm {path}")
                for phase in self.jobs():
                    argv = self.argv(ctx, path, direct, phase)
                    result = platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left())
                    samples += self.parse_run(result, ctx, direct, fs, honoured, phase)
            return samples
        finally:
            remove(platform, scratch, timeout=120)  # the test file can be large: always delete it

    def parse_run(
        self,
        result: ExecResult,
        ctx: RunContext,
        direct: int,
        fs: str,
        honoured: str,
        phase: Phase | None = None,
    ) -> list[Sample]:
        """Samples of one fio run (one direct mode); O_DIRECT problems flag, never drop."""
        ph = phase or self.phase
        what = f"{self.name} direct={direct}" + (f" phase={ph.name}" if ph.name else "")
        # a phase names its I/O pattern: rw would only repeat it
        pattern = {"phase": ph.name} if ph.name else {"rw": ph.rw}
        labels: dict[str, Any] = {
            labelkeys.DIRECT: direct,
            **pattern,
            labelkeys.BS: ph.bs,
            labelkeys.IODEPTH: ctx.params["iodepth"],
            labelkeys.IOENGINE: ctx.params["ioengine"],
            labelkeys.SIZE_MIB: ctx.params["size_mib"],
            labelkeys.FS_TYPE: fs,
        }
        if direct:
            labels[labelkeys.DIRECT_HONOURED] = honoured == directio.HONOURED
            labels[labelkeys.DIRECT_IO] = honoured
            labels[labelkeys.IO_PATTERN] = f"{ph.rw} {ph.bs}"
        if result.timed_out:
            check(result, what)
        if result.returncode != 0 and direct and fio.refused_einval(result):
            reason = f"O_DIRECT refused on {fs} (EINVAL): {fio.tail(result)}"
            return [self._flagged(m.name, 0.0, labels, reason) for m in self.metrics]
        if result.returncode != 0:
            check(result, what)
        figures = fio.parse(result, ph.op, what)
        samples = []
        for m in self.metrics:
            value = figures[m.name]
            s = self.sample(m.name, 0.0 if value != value else value, **labels)  # nan -> 0
            if value != value:
                s.labels[labelkeys.INVALID] = "fio reported no p99 completion latency"
            elif direct and (cached := directio.invalid_reason(labels)):
                s.labels[labelkeys.INVALID] = cached
            elif figures["io_bytes"] <= 0:
                s.labels[labelkeys.INVALID] = "fio moved no data"
            samples.append(s)
        return samples

    def _flagged(self, metric: str, value: float, labels: dict, reason: str) -> Sample:
        s = self.sample(metric, value, **labels)
        s.labels[labelkeys.INVALID] = reason
        return s


def _direct_modes(value: Any, what: str) -> list[int]:
    modes = value if isinstance(value, list) else [value]
    if not modes or any(isinstance(d, bool) or d not in (0, 1) for d in modes):
        raise WorkloadError(f"{what}: direct must be a list of 0 and/or 1, got {value!r}")
    return [int(d) for d in dict.fromkeys(modes)]


def _direct_io(by_platform: str, fs: str) -> str:
    """The direct_io label: the platform's verdict, unless the workdir's filesystem is memory."""
    if directio.why_cached(by_platform) or fs not in MEMORY_FILESYSTEMS:
        return by_platform
    return directio.cached(f"the workdir's filesystem ({fs}) keeps files in memory")


def _fs_type(platform: Platform, path: str) -> str:
    """Filesystem type of `path` as the environment sees it (ext2/ext3, xfs, tmpfs, overlayfs)."""
    r = platform.exec(["stat", "-f", "-c", "%T", path], timeout=30)
    return r.stdout.strip() if r.ok and r.stdout.strip() else "unknown"


@register
class FioSeqRead(_Fio):
    name = "fio-seq-read"
    description = "fio sequential read, 1 MiB blocks, buffered and O_DIRECT"
    rw, bs, op = "read", "1M", "read"
    metrics = _metrics("bandwidth_mib_s")


@register
class FioSeqWrite(_Fio):
    name = "fio-seq-write"
    description = (
        "fio sequential write, 1 MiB blocks, buffered and O_DIRECT; buffered: one pass over the"
        " file timed until fsync has put it on the disk"
    )
    rw, bs, op = "write", "1M", "write"
    metrics = _metrics("bandwidth_mib_s")
    params = _Fio.params | {
        # time-based buffered writes rewrite the same pages in the page cache while writeback
        # runs beside them: a figure of memory copy and writeback timing, not of the disk
        "end_fsync": Param(
            1,
            "buffered (direct=0): 1 = one pass over the file, fsync inside the timed job"
            " (fio --end_fsync=1; runtime caps it); 0 = time-based writes into the page cache",
            min=0,
            max=1,
        ),
    }


@register
class FioRandRead(_Fio):
    name = "fio-rand-read"
    description = (
        "fio random read, 4 KiB blocks, buffered and O_DIRECT; buffered: from the page cache,"
        " the file read into it first"
    )
    rw, bs, op = "randread", "4k", "read"
    metrics = _metrics("iops")
    params = _Fio.params | {
        # fio drops the file's cache, then random reads fill it: the figure was a mix of disk
        # and memory reads whose share depends on how fast the cache warmed in the run
        "pre_read": Param(
            1,
            "buffered (direct=0): 1 = read the file into the page cache first (fio --pre_read=1),"
            " a steady page-cache figure; 0 = start from a dropped cache",
            min=0,
            max=1,
        ),
    }


@register
class FioRandWrite(_Fio):
    name = "fio-rand-write"
    description = "fio random write, 4 KiB blocks, buffered and O_DIRECT"
    rw, bs, op = "randwrite", "4k", "write"
    metrics = _metrics("iops")


# IOzone's phases in its order: a first write of a new file, the same file written again,
# read, read again, then random reads and writes (4 KiB, IOzone's -i 2); each a pass over the
# file, as IOzone times them (buffered phases after a write are served from the page cache,
# as IOzone's are when the file fits in memory: seed 004's IOzone1 read 8 GB/s).
IOZONE_PHASES = (
    Phase("write", "1M", "write", "write"),
    Phase("write", "1M", "write", "rewrite"),
    Phase("read", "1M", "read", "read"),
    Phase("read", "1M", "read", "reread"),
    Phase("randread", "4k", "read", "random-read"),
    Phase("randwrite", "4k", "write", "random-write"),
)


@register
class FioIozone(_Fio):
    name = "fio-iozone"
    description = (
        "IOzone's sequence as fio jobs: write, rewrite, read, reread, random read, random write,"
        " buffered and O_DIRECT (seed 002, 004)"
    )
    rw, bs, op = "write", "1M", "write"  # the first phase; run() walks them all
    metrics = _metrics("bandwidth_mib_s")  # IOzone reports every phase in KB/s
    time_based = False
    fresh_file = True
    # IOzone never drops the cache: its reread (and buffered read after a write) measures the
    # page cache, as the paper's IOzone1 (8 GB/s) did; fio would drop it before every job
    keep_cache = True
    # no ramp: each phase is one timed pass, as IOzone times it
    params = {k: v for k, v in _Fio.params.items() if k != "ramp_time"} | {
        "runtime": Param(10, "at most this many seconds per phase", min=1, max=3600),
        # IOzone's read()/write() are synchronous, one request at a time
        "ioengine": Param("psync", "fio --ioengine", choices=("libaio", "psync", "io_uring")),
        "iodepth": Param(1, "fio --iodepth (libaio, io_uring)", min=1, max=4096),
    }

    def jobs(self) -> tuple[Phase, ...]:
        return IOZONE_PHASES
