"""Workloads (test cases) by name and by suite. Modules register themselves on import."""

from __future__ import annotations

from .. import plugins
from .base import Workload

WORKLOADS: dict[str, type[Workload]] = {}

SUITES: dict[str, str] = {
    "cpu": "CPU throughput: sysbench, stress-ng stressors, LINPACK (seed 002, 004)",
    "multicore": "parallel scaling: cpu and memory tools at 1..N threads, rates and fixed-job "
    "times, with scaling efficiency (seed 004)",
    "memory": "memory bandwidth and a block-size sweep showing the cache levels (seed 002)",
    "disk": "fio sequential and 4 KiB random I/O, buffered and O_DIRECT (seed 002, 004)",
    "network": "iperf3 TCP/UDP throughput and request/response round-trip latency (seed 002)",
    "web": "nginx static files under httperf rate sweeps and wrk (seed 000, 003)",
    "latency": "timer tick duration, thread switch latency, cyclictest (seed 001)",
    "lifecycle": "instance start-up, boot, image creation and teardown times (seed 003)",
    "java": "the JVM level: SciMark 2.0 and a multi-threaded JMH benchmark on OpenJDK (seed 004)",
    "wasm": "SciMark's kernels in C, natively and as a WASI module under wasmtime",
    "application": "a multi-tier application: a DayTrader-like servlet on Tomcat with HSQLDB"
    " under JMeter, throughput and response times per interval (seed 004)",
    "conference": "a conferencing media server (nginx-rtmp) as users join one at a time: CPU,"
    " memory, network and viewer quality per user count (seed 002's macro benchmark)",
}


def register(cls: type[Workload]) -> type[Workload]:
    if cls.name in WORKLOADS:
        raise RuntimeError(f"duplicate workload name {cls.name}")
    WORKLOADS[cls.name] = cls
    return cls


def load_all() -> dict[str, type[Workload]]:
    plugins.load("virtbench.workloads", skip={"base", "registry"})
    return WORKLOADS


def by_suite(suite: str) -> list[type[Workload]]:
    load_all()
    return [w for w in WORKLOADS.values() if w.suite == suite]
