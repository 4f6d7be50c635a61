"""What virtbench declared at store schema v1, frozen as data (generated once from commit
448f461: the workload registry, analysis.groups' label sets after every workload module and
report plug-in was imported, and the suite notes). The v1 -> v2 migration describes every run
stored before runs described themselves with it, so they group and read as they did.

Never edit or regenerate: it is what the old code did, not what the current code declares.
"""

from __future__ import annotations

from collections.abc import Iterable

from .description import MetricInfo, RunDescription, global_labels

# v1 applied every declared label to every test case: the report imported all workloads
DIMENSION_LABELS = (
    "block_size_bytes",
    "connections",
    "direct",
    "disk_gb",
    "error_class",
    "file_size",
    "file_size_bytes",
    "file_size_kb",
    "iodepth",
    "message_size_bytes",
    "phase",
    "protocol",
    "rate",
    "rw",
    "step",
    "threads",
)
IGNORED_LABELS = (
    "client_cpus_busy_pct",
    "client_errors",
    "client_nofile",
    "invalid",
    "max_connect_burst",
    "offered_rate",
    "peak_step",
    "stopped",
)
SUITES = {
    "cpu": "CPU throughput: sysbench, stress-ng stressors, LINPACK (seed 002, 004)",
    "memory": "memory bandwidth and a block-size sweep showing the cache levels (seed 002)",
    "disk": "fio sequential and 4 KiB random I/O, buffered and O_DIRECT (seed 002, 004)",
    "network": "iperf3 TCP/UDP throughput and request/response round-trip latency (seed 002)",
    "web": "nginx static files under httperf rate sweeps and wrk (seed 000, 003)",
    "latency": "timer tick duration, thread switch latency, cyclictest (seed 001)",
    "lifecycle": "instance start-up, boot, image creation and teardown times (seed 003)",
}
# test case -> (suite, ((metric, unit, higher_is_better, primary), ...))
METRICS: dict[str, tuple[str, tuple[tuple[str, str, bool, bool], ...]]] = {
    "container-startup": (
        "lifecycle",
        (
            ("startup_ms", "ms", False, True),
            ("run_ms", "ms", False, False),
            ("teardown_ms", "ms", False, False),
        ),
    ),
    "cyclictest": (
        "latency",
        (
            ("max_us", "us", False, True),
            ("p9999_us", "us", False, False),
            ("p99_us", "us", False, False),
            ("avg_us", "us", False, False),
            ("min_us", "us", False, False),
        ),
    ),
    "fio-rand-read": (
        "disk",
        (
            ("bandwidth_mib_s", "MiB/s", True, False),
            ("iops", "IO/s", True, True),
            ("clat_mean_us", "us", False, False),
            ("clat_p99_us", "us", False, False),
        ),
    ),
    "fio-rand-write": (
        "disk",
        (
            ("bandwidth_mib_s", "MiB/s", True, False),
            ("iops", "IO/s", True, True),
            ("clat_mean_us", "us", False, False),
            ("clat_p99_us", "us", False, False),
        ),
    ),
    "fio-seq-read": (
        "disk",
        (
            ("bandwidth_mib_s", "MiB/s", True, True),
            ("iops", "IO/s", True, False),
            ("clat_mean_us", "us", False, False),
            ("clat_p99_us", "us", False, False),
        ),
    ),
    "fio-seq-write": (
        "disk",
        (
            ("bandwidth_mib_s", "MiB/s", True, True),
            ("iops", "IO/s", True, False),
            ("clat_mean_us", "us", False, False),
            ("clat_p99_us", "us", False, False),
        ),
    ),
    "hpcc-linpack": (
        "cpu",
        (
            ("hpl_gflops", "GFLOPS", True, True),
            ("dgemm_gflops", "GFLOPS", True, False),
            ("stream_triad_gbs", "GB/s", True, False),
            ("random_access_gups", "GUP/s", True, False),
            ("fft_gflops", "GFLOPS", True, False),
        ),
    ),
    "httperf-sweep": (
        "web",
        (
            ("peak_throughput", "req/s", True, True),
            ("peak_offered_rate", "req/s", True, False),
            ("capacity_probe", "req/s", True, False),
            ("offered_rate", "req/s", True, False),
            ("reply_rate", "req/s", True, False),
            ("reply_rate_min", "req/s", True, False),
            ("reply_rate_max", "req/s", True, False),
            ("reply_rate_stddev", "req/s", False, False),
            ("send_rate", "conn/s", True, False),
            ("reply_time_ms", "ms", False, False),
            ("transfer_time_ms", "ms", False, False),
            ("connection_time_ms", "ms", False, False),
            ("connect_time_ms", "ms", False, False),
            ("net_throughput", "KB/s", True, False),
            ("errors", "count", False, False),
            ("errors_by_class", "count", False, False),
            ("max_connect_burst", "conns", False, False),
            ("error_pct", "%", False, False),
            ("replies_non_2xx", "count", False, False),
            ("client_cpu_pct", "%", False, False),
            ("steps", "count", True, False),
            ("steps_invalid", "count", False, False),
        ),
    ),
    "iperf3-tcp": (
        "network",
        (
            ("throughput", "Mbit/s", True, True),
            ("sent", "Mbit/s", True, False),
            ("retransmits", "count", False, False),
            ("server_cpu_pct", "%", False, False),
            ("client_cpu_pct", "%", False, False),
        ),
    ),
    "iperf3-udp": (
        "network",
        (
            ("throughput", "Mbit/s", True, True),
            ("sent", "Mbit/s", True, False),
            ("lost_percent", "%", False, False),
            ("jitter_ms", "ms", False, False),
            ("server_cpu_pct", "%", False, False),
            ("client_cpu_pct", "%", False, False),
        ),
    ),
    "mbw": ("memory", (("bandwidth_mib_s", "MiB/s", True, True),)),
    "sockperf-tcp-rr": (
        "network",
        (
            ("rtt_mean_us", "us", False, True),
            ("rtt_p50_us", "us", False, False),
            ("rtt_p99_us", "us", False, False),
            ("rtt_p99.9_us", "us", False, False),
            ("rtt_stddev_us", "us", False, False),
            ("rtt_max_us", "us", False, False),
            ("transactions_per_s", "trans/s", True, False),
            ("dropped", "count", False, False),
            ("client_cpu_pct", "%", False, False),
        ),
    ),
    "sockperf-udp-rr": (
        "network",
        (
            ("rtt_mean_us", "us", False, True),
            ("rtt_p50_us", "us", False, False),
            ("rtt_p99_us", "us", False, False),
            ("rtt_p99.9_us", "us", False, False),
            ("rtt_stddev_us", "us", False, False),
            ("rtt_max_us", "us", False, False),
            ("transactions_per_s", "trans/s", True, False),
            ("dropped", "count", False, False),
            ("client_cpu_pct", "%", False, False),
        ),
    ),
    "stress-ng-cpu-int64": (
        "cpu",
        (
            ("bogo_ops_per_s", "bogo-ops/s", True, True),
            ("bogo_ops_per_cpu_s", "bogo-ops/s", True, False),
        ),
    ),
    "stress-ng-cpu-matrixprod": (
        "cpu",
        (
            ("bogo_ops_per_s", "bogo-ops/s", True, True),
            ("bogo_ops_per_cpu_s", "bogo-ops/s", True, False),
        ),
    ),
    "stress-ng-qsort": (
        "cpu",
        (
            ("bogo_ops_per_s", "bogo-ops/s", True, True),
            ("bogo_ops_per_cpu_s", "bogo-ops/s", True, False),
        ),
    ),
    "sysbench-cpu-1t": ("cpu", (("events_per_s", "events/s", True, True),)),
    "sysbench-cpu-all": ("cpu", (("events_per_s", "events/s", True, True),)),
    "sysbench-memory-sweep": ("memory", (("bandwidth_mib_s", "MiB/s", True, True),)),
    "thread-switch-1000": (
        "latency",
        (
            ("max_us", "us", False, True),
            ("p9999_us", "us", False, False),
            ("p99_us", "us", False, False),
            ("median_us", "us", False, False),
            ("mean_us", "us", False, False),
            ("min_us", "us", False, False),
        ),
    ),
    "thread-switch-2": (
        "latency",
        (
            ("max_us", "us", False, True),
            ("p9999_us", "us", False, False),
            ("p99_us", "us", False, False),
            ("median_us", "us", False, False),
            ("mean_us", "us", False, False),
            ("min_us", "us", False, False),
        ),
    ),
    "thread-switch-sweep": (
        "latency",
        (
            ("max_us", "us", False, True),
            ("p9999_us", "us", False, False),
            ("p99_us", "us", False, False),
            ("median_us", "us", False, False),
            ("mean_us", "us", False, False),
            ("min_us", "us", False, False),
        ),
    ),
    "tick": (
        "latency",
        (
            ("max_us", "us", False, True),
            ("p9999_us", "us", False, False),
            ("p99_us", "us", False, False),
            ("median_us", "us", False, False),
            ("mean_us", "us", False, False),
            ("min_us", "us", False, False),
            ("disturbed_per_s", "1/s", False, False),
            ("tick_delay_us", "us", False, False),
        ),
    ),
    "vm-boot": (
        "lifecycle",
        (
            ("boot_s", "s", False, True),
            ("provision_s", "s", False, False),
            ("qmp_ready_s", "s", False, False),
        ),
    ),
    "vm-image-create": ("lifecycle", (("create_s", "s", False, True),)),
    "vm-shutdown": (
        "lifecycle",
        (("shutdown_s", "s", False, True), ("teardown_s", "s", False, False)),
    ),
    "wrk-max": (
        "web",
        (
            ("requests_per_s", "req/s", True, True),
            ("transfer", "KB/s", True, False),
            ("latency_mean_ms", "ms", False, False),
            ("latency_stdev_ms", "ms", False, False),
            ("latency_max_ms", "ms", False, False),
            ("latency_p50_ms", "ms", False, False),
            ("latency_p75_ms", "ms", False, False),
            ("latency_p90_ms", "ms", False, False),
            ("latency_p99_ms", "ms", False, False),
            ("latency_p99.9_ms", "ms", False, False),
            ("latency_p99.99_ms", "ms", False, False),
            ("errors", "count", False, False),
            ("errors_by_class", "count", False, False),
            ("client_cpu_pct", "%", False, False),
        ),
    ),
}


def describe(test_cases: Iterable[str]) -> RunDescription:
    """The description v1 code implied for a run of these test cases."""
    known = [tc for tc in dict.fromkeys(test_cases) if tc in METRICS]
    metrics = tuple(
        MetricInfo(METRICS[tc][0], tc, *m) for tc in sorted(known) for m in METRICS[tc][1]
    )
    suites = {METRICS[tc][0] for tc in known}
    return RunDescription(
        metrics,
        global_labels(DIMENSION_LABELS, IGNORED_LABELS),
        {s: text for s, text in SUITES.items() if s in suites},
    )
