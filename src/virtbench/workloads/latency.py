"""Latency suite (seed 001 §6.2): timer tick processing duration, thread switch latency,
cyclictest.

`tick` and `thread-switch-*` run virtbench's own static probes (probes/*.c, built by
probes_build) which `Platform.put_file` makes available inside any environment. All figures
are in µs; `max_us` is the headline (seed 001's tables report the maximum). Time series and
the head of the raw samples are written through `ctx.series` with t in seconds since the
probe started.

RT throttling (docs/latency.md): the kernel stops a busy real-time task for (period -
runtime) once per period of its budget (sched_rt_runtime_us, or its cgroup's
cpu.rt_runtime_us). Those windows are not the platform's latency: `max_us` and the
percentiles leave them out (drivers/probe.classify_throttling on the probe's long samples),
`raw_max_us` keeps them, and rt_throttle_* count them. Label `rt_throttling` says what was
done in every sample.
"""

from __future__ import annotations

import secrets
from typing import Any

from .. import labelkeys, probes_build, suites
from ..drivers import cyclictest
from ..drivers.cyclictest import parse_cyclictest, percentile_rank, value_at_rank
from ..drivers.probe import (
    EXIT_NOPERM,
    EXIT_USAGE,
    ThrottleBudget,
    Throttling,
    classify_throttling,
    events_of,
    modes,
    parse_probe,
    probe_failure,
    probe_options,
    stats_without,
)
from ..errors import WorkloadError
from ..platforms.base import Platform
from ..platforms.capabilities import RtBudget
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register

LIB = False  # lower is better for every latency figure


def _us_metrics(*names: str) -> tuple[Metric, ...]:
    """Figures in µs, lower is better; the first is the headline."""
    return tuple(Metric(n, "us", LIB, primary=i == 0) for i, n in enumerate(names))


_STAT_METRICS = (
    *_us_metrics("max_us", "p9999_us", "p999_us", "p99_us", "median_us", "mean_us", "min_us"),
    Metric("raw_max_us", "us", LIB),  # the maximum with RT throttling windows in it
    Metric("rt_throttle_windows", "count", LIB),
    Metric("rt_throttle_total_ms", "ms", LIB),
    Metric("rt_throttle_max_us", "us", LIB),
)
_STAT_KEYS = {
    "max_us": "max",
    "p9999_us": "p9999",
    "p999_us": "p999",
    "p99_us": "p99",
    "median_us": "median",
    "mean_us": "mean",
    "min_us": "min",
}

_COMMON_PARAMS = {
    "policy": Param("fifo", "scheduling policy of the measuring threads", choices=("fifo", "rr")),
    "priority": Param(-1, "real-time priority; -1: the policy's highest (99)", min=-1, max=99),
    "allow_unprivileged": Param(
        False, "without SCHED_FIFO permission, measure as SCHED_OTHER (labelled) instead of failing"
    ),
    "clock": Param(
        "auto",
        "auto: TSC if invariant, else CLOCK_MONOTONIC_RAW",
        choices=("auto", "tsc", "monotonic_raw"),
    ),
}


def _rt_throttle(platform: Platform) -> str | None:
    """sched_rt_runtime_us/period inside the environment: RT throttling (or the fair server)
    lets other tasks take this much of each period even from a SCHED_FIFO probe."""
    r = platform.exec(
        ["cat", "/proc/sys/kernel/sched_rt_runtime_us", "/proc/sys/kernel/sched_rt_period_us"],
        timeout=10,
    )
    parts = r.stdout.split()
    return f"{parts[0]}/{parts[1]}" if r.ok and len(parts) == 2 else None


# labels that record the RT budgets that can throttle the probe, "runtime/period" in µs
_BUDGET_LABELS = {
    "rt_group_runtime_period_us": "cgroup cpu.rt_runtime_us",
    "rt_runtime_period_us": "kernel.sched_rt_runtime_us",
}


def throttle_budgets(labels: dict[str, Any]) -> list[ThrottleBudget]:
    """The budgets a probe's labels recorded, the innermost (its own group's) first.

    A group on a period of its own (a container's share of a split budget, on 10 ms:
    scenarios/rt_budget.py) is the only one: the groups' shares add up to at most the host's
    runtime, so the host's own windows (period - runtime, 50 ms) do not stop the task, while
    a real-time competitor whose group is capped leaves gaps of just that size."""
    out = []
    for key, source in _BUDGET_LABELS.items():
        try:
            runtime, period = (int(x) for x in str(labels[key]).split("/"))
        except (KeyError, ValueError):
            continue
        if 0 <= runtime < period:  # -1 (unlimited) or runtime == period never throttles
            out.append(ThrottleBudget(source, runtime, period))
    if len(out) > 1 and out[0].period_us != out[1].period_us:
        return out[:1]
    return out


def throttling_labels(th: Throttling | None) -> dict[str, Any]:
    if th is None:
        return {"rt_throttling": "not classified (probe output without events)"}
    if th.budget is None:
        return {"rt_throttling": "none detected"}
    b = th.budget
    out: dict[str, Any] = {
        "rt_throttling": "excluded"
        if th.phases
        else "excluded by size (stalls of the budget's stall, no period boundary seen)",
        "rt_throttle_source": f"{b.source} {b.runtime_us}/{b.period_us}",
        "rt_throttle_phase_anchors": th.anchors,
        "rt_throttle_phases": th.phases,
    }
    if th.unanchored:  # excluded by their size alone
        out["rt_throttle_unanchored"] = th.unanchored
    if th.overlapped:  # the part after the window end was kept
        out["rt_throttle_overlapped"] = th.overlapped
    if th.merged:  # a competitor's quantum around a window: the window excluded
        out["rt_throttle_merged"] = th.merged
    if th.complementary:  # windows of the second budget (the root's beside the group's)
        out["rt_throttle_complementary"] = th.complementary
    if th.quantum_ns:  # the competitor's recurring gap, kept whole
        out["rt_throttle_quantum_us"] = round(th.quantum_ns / 1000.0, 1)
    if th.ambiguous_ns:  # kept in the maximum, though long enough to be a shortened window
        out[labelkeys.RT_THROTTLE_AMBIGUOUS_US] = round(th.ambiguous_ns / 1000.0, 1)
    return out


def _timeout(ctx: RunContext, seconds: float, what: str) -> float:
    need = seconds + 30  # calibration, building, put_file and output
    if ctx.timeout is not None and ctx.timeout < need:
        raise WorkloadError(
            f"{what}: duration {seconds:g}s needs cell_timeout >= {need:g}s, "
            f"campaign has {ctx.timeout:g}s"
        )
    return ctx.timeout or need


class _Probe(Workload):
    """Runs one of virtbench's probes inside the environment and parses its JSON."""

    suite = suites.LATENCY
    probe: str  # vb-<probe>

    def probe_argv(self, ctx: RunContext) -> list[str]:
        p = ctx.params
        return probe_options(p["policy"], p["clock"], p["priority"], p["allow_unprivileged"])

    def run_probe(
        self, platform: Platform, ctx: RunContext, extra: list[str], seconds: float
    ) -> tuple[Any, dict[str, Any]]:
        path = platform.put_file(probes_build.probe_path(self.probe))
        argv = [path, *self.probe_argv(ctx), *extra]
        result = platform.exec(argv, cpus=ctx.cpus, timeout=_timeout(ctx, seconds, self.name))
        if result.returncode in (EXIT_USAGE, EXIT_NOPERM) and not result.timed_out:
            raise probe_failure(self.name, result.returncode, result.stderr)
        check(result, self.name)
        parsed = parse_probe(result.stdout, self.name)
        throttle = _rt_throttle(platform)
        if throttle:
            parsed.labels[labelkeys.RT_RUNTIME_PERIOD_US] = throttle
        held = platform.rt_budget() if isinstance(platform, RtBudget) else None
        if held:
            parsed.labels[labelkeys.RT_GROUP_RUNTIME_PERIOD_US] = f"{held[0]}/{held[1]}"
        return parsed, parsed.labels

    def stat_samples(self, stats_us: dict[str, float], labels: dict[str, Any]) -> list[Sample]:
        """The statistics as recorded (version 1 probe output, no events)."""
        return [
            self.sample(m, stats_us[k], **labels) for m, k in _STAT_KEYS.items() if k in stats_us
        ]

    def throttled(self, data: dict[str, Any], labels: dict[str, Any]) -> Throttling | None:
        events = events_of(data)
        if events is None:
            return None
        duration_ns = float(data.get("duration_s") or 0) * 1e9
        return classify_throttling(events, throttle_budgets(labels), duration_ns)

    def samples_without_throttling(
        self, data: dict[str, Any], stats_us: dict[str, float], labels: dict[str, Any]
    ) -> tuple[list[Sample], Throttling | None]:
        """The statistics with RT throttling windows left out, the raw maximum and the
        throttling row; the labels say what was done."""
        th = self.throttled(data, labels)
        labels = {**labels, **throttling_labels(th)}
        if th is None:
            return self.stat_samples(stats_us, labels), None
        if data.get("events", {}).get("dropped"):
            labels[labelkeys.WARNING] = "; ".join(
                filter(
                    None, [labels.get(labelkeys.WARNING), "event buffer full: maxima may be wrong"]
                )
            )
        stats = stats_without(data, th)
        samples = [self.sample(m, stats[k], **labels) for m, k in _STAT_KEYS.items()]
        samples += [
            self.sample("raw_max_us", stats_us["max"], **labels),
            self.sample("rt_throttle_windows", th.count, **labels),
            self.sample("rt_throttle_total_ms", th.total_ns / 1e6, **labels),
            self.sample("rt_throttle_max_us", th.max_ns / 1e3, **labels),
        ]
        return samples, th

    def block_series(
        self, ctx: RunContext, data: dict[str, Any], th: Throttling | None, name: str
    ) -> None:
        """Per-block maxima over time (`<name>_max_us`, throttled stalls replaced by what the
        block had without them) and the throttled stalls (`<name>_throttle_us`)."""
        stalls = {}
        events = events_of(data) or []
        if th is not None:
            stalls = {round(events[i][1], 1): events[i] for i in th.remaining_ns}
        cols = data.get("series", {}).get("columns", [])
        for point in data.get("series", {}).get("points", []):
            row = dict(zip(cols, point, strict=False))
            hi = row["max_ns"]
            if round(hi, 1) in stalls and "max2_ns" in row:
                t0, d = stalls[round(hi, 1)]
                left = th.remaining_ns[events.index((t0, d))] if th else 0.0
                hi = max(row["max2_ns"], left)
            ctx.series(f"{name}_max_us", row["t_s"], hi / 1000.0, "us", "target")
            if name == "tick":
                ctx.series("tick_min_us", row["t_s"], row["min_ns"] / 1000.0, "us", "target")
        if th is not None:
            for i in th.remaining_ns:
                t, d = events[i]
                ctx.series(f"{name}_throttle_us", t / 1e9, d / 1000.0, "us", "target")


@register
class Tick(_Probe):
    name = "tick"
    description = (
        "clock tick processing duration: SCHED_FIFO busy loop of ~65 µs timed with the TSC; "
        "durations above the main mode are ticks/interrupts/preemptions (seed 001 §6.2.1)"
    )
    probe = "tick"
    metrics = (
        *_STAT_METRICS,
        Metric("disturbed_per_s", "1/s", LIB),
        Metric("tick_delay_us", "us", LIB),
    )
    params = {
        "duration": Param(10.0, "seconds of back-to-back busy loops", min=0.1, max=86400),
        "loop_us": Param(65.0, "undisturbed busy-loop duration in µs", min=5, max=10000),
        "hist_bin_ns": Param(100.0, "histogram bin width near the modes", min=1, max=1e6),
        "series_points": Param(2000, "points of the duration-over-time series", min=10, max=1e6),
        **_COMMON_PARAMS,
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        p = ctx.params
        extra = [
            "--duration",
            str(p["duration"]),
            "--loop-us",
            str(p["loop_us"]),
            "--hist-bin-ns",
            str(p["hist_bin_ns"]),
            "--series-points",
            str(p["series_points"]),
        ]
        parsed, labels = self.run_probe(platform, ctx, extra, float(p["duration"]))
        return self.to_samples(parsed.data, parsed.stats_us, labels, ctx)

    def to_samples(
        self, data: dict[str, Any], stats_us: dict[str, float], labels: dict[str, Any], ctx
    ) -> list[Sample]:
        labels = dict(labels)
        labels[labelkeys.CPU_MIGRATIONS] = data.get("cpu", {}).get("migrations")
        if data.get("truncated"):
            labels[labelkeys.INVALID] = "sample buffer filled before the duration ended"
        bins = data.get("histogram", {}).get("bins", [])
        m = modes(bins)
        duration = float(data.get("duration_s") or 0) or 1.0
        labels[labelkeys.MAIN_MODE_US] = m.main_us
        samples, th = self.samples_without_throttling(data, stats_us, labels)
        labels = samples[0].labels
        samples[0].labels = {
            **labels,
            "histogram_ns": bins,
            "loop": data.get("loop"),
            "events_ns": data.get("events"),  # to classify throttling again from the store
        }
        samples.append(self.sample("disturbed_per_s", m.disturbed / duration, **labels))
        if m.delay_us is not None:
            samples.append(self.sample("tick_delay_us", m.delay_us, **labels))
        self.block_series(ctx, data, th, "tick")
        for t, d in data.get("head", {}).get("points", []):
            ctx.series("tick_head_us", t, d / 1000.0, "us", "target")
        return samples


class _ThreadSwitch(_Probe):
    probe = "switch"
    description = "thread switch latency between SCHED_FIFO threads on one CPU (seed 001 §6.2.2)"
    metrics = _STAT_METRICS
    fixed_threads: tuple[int, ...] = ()
    params = {
        "switches": Param(200000, "thread switches to record per run", min=100, max=1e9),
        "max_duration": Param(30.0, "stop a run after this many seconds", min=0.1, max=86400),
        "series_points": Param(2000, "points of the latency-over-time series", min=10, max=1e6),
        **_COMMON_PARAMS,
    }

    def thread_counts(self, ctx: RunContext) -> list[int]:
        return list(self.fixed_threads)

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        p = ctx.params
        samples: list[Sample] = []
        for n in self.thread_counts(ctx):
            extra = [
                "--threads",
                str(n),
                "--switches",
                str(p["switches"]),
                "--duration",
                str(p["max_duration"]),
                "--series-points",
                str(p.get("series_points", 2000)),
            ]
            parsed, labels = self.run_probe(platform, ctx, extra, float(p["max_duration"]))
            labels = {
                **labels,
                labelkeys.THREADS: n,
                labelkeys.SELF_YIELDS: parsed.data.get("self_yields", 0),
                labelkeys.TORN_SAMPLES: parsed.data.get("torn_samples", 0),
            }
            if parsed.data.get("self_yields") and labels.get(labelkeys.REALTIME):
                labels[labelkeys.WARNING] = (
                    "threads ran on after sched_yield: not a pure FIFO switch"
                )
            out, th = self.samples_without_throttling(parsed.data, parsed.stats_us, labels)
            bins = parsed.data.get("histogram", {}).get("bins")
            out[0].labels = {
                **out[0].labels,
                "histogram_ns": bins,
                "events_ns": parsed.data.get("events"),
            }
            samples += out
            self.block_series(ctx, parsed.data, th, f"switch{n}")
        return samples


@register
class ThreadSwitch2(_ThreadSwitch):
    name = "thread-switch-2"
    description = _ThreadSwitch.description + ", 2 threads"
    fixed_threads = (2,)


@register
class ThreadSwitch1000(_ThreadSwitch):
    name = "thread-switch-1000"
    description = _ThreadSwitch.description + ", 1000 threads (caches no longer hold them)"
    fixed_threads = (1000,)


@register
class ThreadSwitchSweep(_ThreadSwitch):
    name = "thread-switch-sweep"
    dimension_labels = (labelkeys.THREADS,)  # one result per thread count
    description = _ThreadSwitch.description + ", for each count in `threads` (label threads)"
    params = {
        **_ThreadSwitch.params,
        "threads": Param([2, 10, 100, 1000], "thread counts to sweep", min=2, max=10000),
    }

    def thread_counts(self, ctx: RunContext) -> list[int]:
        counts = ctx.params["threads"]
        if any(not isinstance(n, int) for n in counts):
            raise WorkloadError(f"{self.name}: threads must be integers, got {counts!r}")
        return list(counts)


@register
class Cyclictest(Workload):
    suite = suites.LATENCY
    name = "cyclictest"
    description = "cyclictest (rt-tests): timer wake-up latency of a SCHED_FIFO thread"
    tools = ("cyclictest",)
    metrics = _us_metrics("max_us", "p9999_us", "p99_us", "avg_us", "min_us")
    params = {
        "duration": Param(10.0, "seconds", min=1, max=86400),
        "interval_us": Param(1000, "wake-up interval in µs", min=50, max=1_000_000),
        "histogram_us": Param(10000, "histogram range in µs (above: overflows)", min=10, max=1e6),
        "policy": _COMMON_PARAMS["policy"],
        "priority": _COMMON_PARAMS["priority"],
    }

    def command(self, ctx: RunContext, platform: Platform) -> list[str]:
        raise NotImplementedError  # run() below: the result is a file read back afterwards

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        p = ctx.params
        out = f"{platform.workdir}/vb-cyclictest-{secrets.token_hex(4)}.json"
        prio = 99 if p["priority"] < 0 else p["priority"]
        argv = cyclictest.argv(
            out, prio, p["policy"], p["interval_us"], p["duration"], p["histogram_us"]
        )
        try:
            result = platform.exec(
                argv, cpus=ctx.cpus, timeout=_timeout(ctx, p["duration"], self.name)
            )
            if "Unable to change scheduling policy" in result.stderr:
                raise WorkloadError(
                    "cyclictest: no permission for a real-time policy (it has no unprivileged "
                    "mode): run virtbench as root or give CAP_SYS_NICE / RLIMIT_RTPRIO"
                )
            check(result, self.name)
            got = platform.exec(["cat", out], timeout=30)
            check(got, "cyclictest (reading --json)")
        finally:
            platform.exec(["rm", "-f", out], timeout=30)
        return self.to_samples(got.stdout, platform)

    def to_samples(self, text: str, platform: Platform | None = None) -> list[Sample]:
        r = parse_cyclictest(text)
        labels = dict(r.labels)
        if platform is not None and (throttle := _rt_throttle(platform)):
            labels[labelkeys.RT_RUNTIME_PERIOD_US] = throttle
        in_hist = sum(r.histogram.values())
        labels[labelkeys.HISTOGRAM_OVERFLOWS] = max(0, labels[labelkeys.CYCLES] - in_hist)
        mx = max(float(t["max"]) for t in r.threads)
        mn = min(float(t["min"]) for t in r.threads)
        cycles = [int(t.get("cycles", 0)) for t in r.threads]
        avg = sum(float(t["avg"]) * c for t, c in zip(r.threads, cycles, strict=True)) / max(
            1, sum(cycles)
        )
        samples = [
            self.sample(
                "max_us", mx, **labels, **{labelkeys.HISTOGRAM_US: sorted(r.histogram.items())}
            ),
            self.sample("avg_us", avg, **labels),
            self.sample("min_us", mn, **labels),
        ]
        # a percentile whose rank lies among the overflows is beyond the histogram: omitted
        for metric, pct in (("p99_us", 99.0), ("p9999_us", 99.99)):
            value = value_at_rank(r.histogram, percentile_rank(labels[labelkeys.CYCLES], pct))
            if value is not None:
                samples.append(self.sample(metric, value, **labels))
        return samples
