"""Every suite and its facts, in one place: its name, what it measures, how it is scored.

Workloads name their suite through these constants; the runner stores each run's suites
with their description and scoring (runner/describe.py -> store `run_suites`), so analysis
and report read how a stored run was scored from the store, and use these names only to
find a suite's rows. Ground level: imports nothing of virtbench.
"""

from __future__ import annotations

from dataclasses import dataclass

CPU = "cpu"
MULTICORE = "multicore"
MEMORY = "memory"
DISK = "disk"
NETWORK = "network"
WEB = "web"
LATENCY = "latency"
LIFECYCLE = "lifecycle"
JAVA = "java"
WASM = "wasm"
APPLICATION = "application"
CONFERENCE = "conference"


@dataclass(frozen=True)
class Suite:
    name: str
    description: str  # shown in the report and by `virtbench list`
    # inside the workload geomean "all"; False: a cost of creating the isolation (start-up,
    # boot, teardown), not a slowdown of the workload inside it, shown beside "all"
    workload: bool = True
    # seed 004 scores seven suites (Table 2); the others get no seed 004 total
    seed004: bool = False
    # False: no score at all. Maxima of rare events are not throughputs, so a geometric mean
    # or seed 004 sum of them means nothing; users served before saturation is often only a
    # lower bound (max_users came first), and its curves are the result
    scored: bool = True


SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite(
            CPU,
            "CPU throughput: sysbench, stress-ng stressors, LINPACK (seed 002, 004)",
            seed004=True,
        ),
        Suite(
            MULTICORE,
            "parallel scaling: cpu and memory tools at 1..N threads, rates and"
            " fixed-job times, with scaling efficiency (seed 004)",
            seed004=True,
        ),
        Suite(
            MEMORY,
            "memory bandwidth and a block-size sweep showing the cache levels (seed 002)",
            seed004=True,
        ),
        Suite(
            DISK,
            "fio sequential and 4 KiB random I/O, buffered and O_DIRECT (seed 002, 004)",
            seed004=True,
        ),
        Suite(
            NETWORK,
            "iperf3 TCP/UDP throughput and request/response round-trip latency (seed 002)",
            seed004=True,
        ),
        Suite(WEB, "nginx static files under httperf rate sweeps and wrk (seed 000, 003)"),
        Suite(
            LATENCY,
            "timer tick duration, thread switch latency, cyclictest (seed 001)",
            scored=False,
        ),
        Suite(
            LIFECYCLE,
            "instance start-up, boot, image creation and teardown times (seed 003)",
            workload=False,
        ),
        Suite(
            JAVA,
            "the JVM level: SciMark 2.0 and a multi-threaded JMH benchmark on OpenJDK (seed 004)",
            seed004=True,
        ),
        Suite(WASM, "SciMark's kernels in C, natively and as a WASI module under wasmtime"),
        Suite(
            APPLICATION,
            "a multi-tier application: a DayTrader-like servlet on Tomcat with"
            " HSQLDB under JMeter, throughput and response times per interval (seed 004)",
            seed004=True,
        ),
        Suite(
            CONFERENCE,
            "a conferencing media server (nginx-rtmp) as users join one at a"
            " time: CPU, memory, network and viewer quality per user count (seed 002's"
            " macro benchmark)",
            scored=False,
        ),
    ]
}


def get(name: str) -> Suite:
    """A suite's facts; a suite this version does not know gets the defaults (described by
    nothing, scored inside "all", no seed 004 total)."""
    return SUITES.get(name) or Suite(name, "")
