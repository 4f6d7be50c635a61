"""JMH (the OpenJDK Java Microbenchmark Harness): argv for its command line runner, and its
results: the score from the JSON result file, warm-up iterations from its text output (the
JSON keeps only the measured ones)."""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from typing import Any

from .. import labelkeys
from ..errors import WorkloadError

MAIN = "org.openjdk.jmh.Main"
_WARMUP = re.compile(r"^# Warmup Iteration\s+(\d+):\s+([\d.,]+|NaN)\s+(\S+)", re.MULTILINE)


def argv(
    java: list[str],
    benchmark: str,
    threads: int,
    warmup_iterations: int,
    iterations: int,
    seconds: int,
    jvm_flags: list[str],
    result_file: str,
    params: dict[str, str] | None = None,
) -> list[str]:
    """One fork (a fresh JVM with `jvm_flags`) running `benchmark` in `threads` threads
    (0: one per CPU the JVM sees), throughput mode in ops/s."""
    out = [
        *java,
        MAIN,
        f"^{re.escape(benchmark)}$",
        "-f",
        "1",
        "-wi",
        str(warmup_iterations),
        "-w",
        f"{seconds}s",
        "-i",
        str(iterations),
        "-r",
        f"{seconds}s",
        "-t",
        str(threads) if threads > 0 else "max",
        "-bm",
        "thrpt",
        "-tu",
        "s",
        "-jvmArgsAppend",
        " ".join(jvm_flags),
        "-rf",
        "json",
        "-rff",
        result_file,
    ]
    for k, v in (params or {}).items():
        out += ["-p", f"{k}={v}"]
    return out


@dataclass
class JmhResult:
    score: float  # mean of the measured iterations, ops/s
    score_error: float  # JMH's 99.9% half-width
    iterations: list[float]  # measured iterations, ops/s
    warmup: list[float]  # warm-up iterations, ops/s (the first is the coldest)
    labels: dict[str, Any]


def parse(result_json: str, stdout: str, what: str) -> JmhResult:
    try:
        runs = json.loads(result_json)
        run = runs[0]
        pm = run["primaryMetric"]
    except (ValueError, LookupError, TypeError) as e:
        raise WorkloadError(f"{what}: no JMH result in its JSON file ({e})") from e
    if pm.get("scoreUnit") != "ops/s":
        raise WorkloadError(f"{what}: JMH score in {pm.get('scoreUnit')}, ops/s expected")
    raw = [float(v) for fork in pm.get("rawData", []) for v in fork]
    warmup = [float(v.replace(",", "")) for _n, v, _u in _WARMUP.findall(stdout) if v != "NaN"]
    labels = {
        labelkeys.BENCHMARK: run.get("benchmark"),
        labelkeys.THREADS: run.get("threads"),
        labelkeys.FORKS: run.get("forks"),
        labelkeys.WARMUP_ITERATIONS: run.get("warmupIterations"),
        labelkeys.MEASUREMENT_ITERATIONS: run.get("measurementIterations"),
        labelkeys.ITERATION_TIME: run.get("measurementTime"),
        labelkeys.JMH_VERSION: run.get("jmhVersion"),
        labelkeys.VM_VERSION: run.get("vmVersion"),
        labelkeys.JVM_ARGS: " ".join(run.get("jvmArgs", [])),
    }
    for k, v in (run.get("params") or {}).items():
        labels[f"param_{k}"] = v
    if not raw:
        raise WorkloadError(f"{what}: JMH JSON has no measured iterations")
    return JmhResult(float(pm["score"]), float(pm.get("scoreError") or 0), raw, warmup, labels)


def steady(result: JmhResult) -> float:
    return statistics.median(result.iterations)
