"""fio: one job's bandwidth, IOPS and completion latency, read from its JSON output; and
how it says the filesystem refused O_DIRECT."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import WorkloadError
from ..platforms.base import ExecResult

EINVAL = 22


@dataclass(frozen=True)
class Job:
    """One fio job on the file `path`: `runtime` seconds of `rw` I/O in `bs` blocks, or (not
    time_based) one pass over the file's `size_mib`, stopped after `runtime` seconds at most."""

    name: str
    path: str
    size_mib: int
    rw: str
    bs: str
    ioengine: str
    iodepth: int
    runtime: int
    time_based: bool = True
    invalidate: bool = True  # fio drops the file's page cache before the job (its default)
    ramp_time: int = 0  # seconds of I/O before fio starts counting (fio --ramp_time)
    end_fsync: bool = False  # fsync the file at the end, inside the timed job (fio --end_fsync)
    pre_read: bool = False  # read the file into the page cache before the job (fio --pre_read)

    def argv(self, direct: int) -> list[str]:
        """The job with O_DIRECT (1) or buffered (0), its JSON report on stdout."""
        return [
            "fio",
            f"--name={self.name}",
            f"--filename={self.path}",
            f"--size={self.size_mib}M",
            f"--rw={self.rw}",
            f"--bs={self.bs}",
            f"--direct={direct}",
            f"--ioengine={self.ioengine}",
            f"--iodepth={self.iodepth}",
            f"--runtime={self.runtime}",
            *(["--time_based"] if self.time_based else []),
            *([] if self.invalidate else ["--invalidate=0"]),
            "--output-format=json",
            *([f"--ramp_time={self.ramp_time}"] if self.ramp_time else []),
            *(["--end_fsync=1"] if self.end_fsync else []),
            *(["--pre_read=1"] if self.pre_read else []),
        ]


def fio_json(text: str, what: str) -> dict[str, Any]:
    """The JSON document in fio's stdout (fio prints error lines before it)."""
    start = text.find("{")
    if start < 0:
        raise WorkloadError(f"{what}: no JSON in fio output")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{what}: fio JSON does not parse: {exc}") from exc
    if not isinstance(doc, dict) or not doc.get("jobs"):
        raise WorkloadError(f"{what}: fio JSON has no jobs")
    return doc


def fio_job_figures(doc: dict[str, Any], op: str, what: str) -> dict[str, float]:
    """bandwidth MiB/s, IOPS and completion latency (mean, p99; microseconds) of job 0."""
    job = doc["jobs"][0]
    stats = job.get(op)
    if not isinstance(stats, dict):
        raise WorkloadError(f"{what}: fio job has no '{op}' section")
    try:
        clat = stats["clat_ns"]
        p99 = clat.get("percentile", {}).get("99.000000")
        return {
            "bandwidth_mib_s": stats["bw_bytes"] / 2**20,
            "iops": float(stats["iops"]),
            "clat_mean_us": clat["mean"] / 1000.0,
            "clat_p99_us": (p99 / 1000.0) if p99 is not None else float("nan"),
            "io_bytes": float(stats["io_bytes"]),
        }
    except (KeyError, TypeError) as exc:
        raise WorkloadError(f"{what}: fio '{op}' section lacks {exc}") from exc


def parse(result: ExecResult, op: str, what: str) -> dict[str, float]:
    """fio_job_figures of a run that exited 0; a job error raises with fio's own words."""
    doc = fio_json(result.stdout, what)
    error = doc["jobs"][0].get("error", 0)
    if error:
        raise WorkloadError(f"{what}: fio job error {error}: {tail(result)}")
    return fio_job_figures(doc, op, what)


def refused_einval(result: ExecResult) -> bool:
    """fio failed with EINVAL: on an O_DIRECT run, the filesystem refused O_DIRECT."""
    text = result.stdout + result.stderr
    if "Invalid argument" in text or f"err={EINVAL}/" in text:
        return True
    try:
        return fio_json(result.stdout, "fio")["jobs"][0].get("error") == EINVAL
    except WorkloadError:
        return False


def tail(result: ExecResult) -> str:
    """fio's last two 'fio:' lines, or its exit status."""
    lines = [ln for ln in (result.stderr + "\n" + result.stdout).splitlines() if "fio:" in ln]
    return " | ".join(lines[-2:]) or f"exit {result.returncode}"
