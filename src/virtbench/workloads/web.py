"""Web suite (seeds 000, 003): nginx inside the environment serving static files; an httperf
open-loop rate sweep that finds the saturation point, and a wrk closed-loop maximum.

Every sweep step records the load generator's own CPU; a step where the client, not the
server, was the limit is stored with labels["invalid"] and never becomes the headline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

from .. import labelkeys
from ..drivers import nginx, sweep, wrk
from ..drivers.sweep import LockstepParty
from ..errors import WorkloadError, WorkloadTimeout
from ..platforms.base import Platform
from ..serving.loadgen import (
    ClientRun,
    ParallelRun,
    raise_nofile,
    run_client,
)
from ..serving.netpath import listen_address
from ..serving.readiness import http_probe
from ..serving.remote import MAX_SESSIONS
from ..serving.server import Served, serve
from .base import Metric, Param, RunContext, Sample, Workload
from .network import CLIENT_PATH_PARAM
from .registry import register
from .web_httperf import HttperfSteps, SweepState

PAPER_SIZES = [1, 4, 10, 30, 50, 70, 100, 200]

COMMON_PARAMS = {
    "file_sizes": Param(PAPER_SIZES, "static file sizes in KB", min=nginx.MIN_KB, max=nginx.MAX_KB),
    "port": Param(0, "server port inside the environment; 0 picks a free one", min=0, max=65535),
    "workers": Param(0, "nginx worker processes; 0 = one per CPU it sees", min=0, max=256),
    "calls_per_conn": Param(
        1,
        "requests per TCP connection (1 = a new connection per request, as the papers)",
        min=1,
        max=100_000,
    ),
    # where the load generator runs (serving/netpath.py), recorded as label net_path
    "client_path": CLIENT_PATH_PARAM,
}


class _NginxWorkload(Workload):
    suite = "web"
    # A sweep point is identified by file size and step index (in capacity mode the offered
    # rate follows each repetition's probe, so it is a fact of the point, not its identity).
    dimension_labels = (
        labelkeys.FILE_SIZE_KB,
        labelkeys.STEP,
        labelkeys.ERROR_CLASS,
        labelkeys.PHASE,
    )
    dimension_labels += (labelkeys.CONNECTIONS,)
    dimension_labels += (labelkeys.NET_PATH,)  # the client's path (serving/netpath.py)
    # facts of a sweep and of its load generator
    ignored_labels = (labelkeys.OFFERED_RATE, labelkeys.PEAK_STEP, labelkeys.STOPPED)
    ignored_labels += (labelkeys.MAX_CONNECT_BURST,)
    ignored_labels += (
        labelkeys.CLIENT_NOFILE,
        labelkeys.CLIENT_ERRORS,
        labelkeys.CLIENT_CPUS_BUSY_PCT,
    )
    # how many httperf processes a step ran (and on the busiest client CPU), the sockets they
    # held and their --timeout: a fixed-rate step sizes them to its rate (so they differ
    # between file sizes)
    ignored_labels += (labelkeys.CLIENTS, labelkeys.CLIENT_SOCKETS, labelkeys.TIMEOUT_S)
    ignored_labels += (labelkeys.CLIENTS_PER_CPU,)
    # which capacity probe set a sweep's scale: one of a size's probes, never a result's identity
    ignored_labels += (labelkeys.PROBE_USED,)
    tools = ("nginx",)
    size_param = "file_sizes"  # ServedSizes (workloads/capabilities.py): different:SIZE sets it

    def sizes(self, ctx: RunContext) -> list[int]:
        return nginx.validate_sizes(ctx.params.get("file_sizes", PAPER_SIZES))

    @contextmanager
    def nginx(self, platform: Platform, ctx: RunContext, sizes: list[int]) -> Iterator[Served]:
        p = ctx.params
        state: dict[str, str] = {}

        def make_argv(port: int) -> list[str]:
            root, conf = nginx.prepare(
                platform, sizes, port, int(p.get("workers", 0)), listen_address(platform, ctx)
            )
            state["root"] = root
            return nginx.argv(root, conf)

        with serve(
            platform,
            make_argv,
            ctx,
            what=f"{self.name}: nginx",
            port_key="suites.web.port",
            requested_port=int(p.get("port", 0)),
            probe=http_probe(nginx.uri(sizes[0])),
        ) as served:
            self.label_all(**{labelkeys.NET_PATH: served.path})
            yield served

    @staticmethod
    def url(served: Served, size: int) -> str:
        host = f"[{served.host}]" if ":" in served.host else served.host
        return f"http://{host}:{served.port}{nginx.uri(size)}"

    def client_sample(self, run: ClientRun | ParallelRun, **labels: Any) -> Sample:
        s = self.sample("client_cpu_pct", 100 * run.cpu_util, **labels)
        s.role = "client"
        return s

    @staticmethod
    def stall(platform: Platform | None, ctx: RunContext, what: str) -> str | None:
        """After a client run: did the environment's network stall during it (a TCG guest's
        transmit ring, vm/nicstall.py)? Reset by the platform, and said, so the run is
        flagged invalid instead of averaging a server that went silent mid-run into the
        figures, and the next run finds a working NIC."""
        why = platform.network_stall() if platform is not None else None
        if why:
            ctx.log(f"{what}: {why}")
        return why

    @staticmethod
    def check_alive(served: Served, what: str, samples: list[Sample]) -> None:
        code = served.proc.poll()
        if code is not None:
            raise WorkloadError(
                f"{what}: the server exited (code {code}) mid-run; samples so far are kept",
                samples=samples,
            )

    def wrk_run(
        self,
        served: Served,
        size: int,
        ctx: RunContext,
        threads: int,
        conns: int,
        secs: float,
        calls: int | None = None,
    ) -> tuple[wrk.WrkResult, ClientRun]:
        """wrk with `calls` requests per connection (default: the calls_per_conn param;
        0 = keep-alive for the whole run)."""
        calls = int(ctx.params.get("calls_per_conn", 1)) if calls is None else calls
        with wrk.script() as path:
            argv = wrk.argv(self.url(served, size), path, threads, conns, secs)
            run = run_client(
                argv,
                ctx,
                threads=threads,
                timeout=secs + 30,
                env={"VB_CALLS_PER_CONN": str(calls)},
            )
        if not run.result.ok:
            tail = (run.result.stderr or run.result.stdout).strip().splitlines()[-3:]
            late = f" (killed after {secs + 30:.0f} s)" if run.result.timed_out else ""
            error = WorkloadTimeout if run.result.timed_out else WorkloadError
            raise error(f"{self.name}: wrk failed{late}: {' | '.join(tail)}")
        return wrk.parse(run.result.stdout), run


@register
class HttperfSweep(_NginxWorkload):
    name = "httperf-sweep"
    description = (
        "httperf open-loop rate sweep against nginx: throughput vs offered rate, peak"
        " sustained throughput and the rate where it is reached (seed 000 Fig. 5, 003 Fig. 16)"
    )
    host_tools = ("httperf", "wrk")
    # co-location's capabilities (workloads/capabilities.py): OfferedRate, RateSchedule,
    # SoloPeakRetry (unsaturated below), StepsTogether (run_together)
    rate_param = "rate"
    param_order = (("start_fraction", "max_fraction"),)  # else a sweep with no rate at all
    # set by the co-location pair scenarios only (not a campaign parameter): file size (KB,
    # as text) -> offered req/s of each step, shares of this environment's solo peak
    schedule_param = "schedule"
    top_rate_param = "min_top_rate"  # a solo peak's retry only (scenarios/peaks.py)
    metrics = (
        Metric("peak_throughput", "req/s", True, primary=True),
        Metric("peak_offered_rate", "req/s", True),
        Metric("capacity_probe", "req/s", True),
        Metric("offered_rate", "req/s", True),
        Metric("reply_rate", "req/s", True),
        Metric("reply_rate_min", "req/s", True),
        Metric("reply_rate_max", "req/s", True),
        Metric("reply_rate_stddev", "req/s", False),
        Metric("send_rate", "conn/s", True),
        Metric("reply_time_ms", "ms", False),
        Metric("transfer_time_ms", "ms", False),
        Metric("connection_time_ms", "ms", False),
        Metric("connect_time_ms", "ms", False),
        Metric("net_throughput", "KB/s", True),
        Metric("errors", "count", False),
        Metric("errors_by_class", "count", False),
        Metric("max_connect_burst", "conns", False),
        Metric("error_pct", "%", False),
        Metric("replies_non_2xx", "count", False),
        Metric("client_cpu_pct", "%", False),
        Metric("steps", "count", True),
        Metric("steps_invalid", "count", False),
    )
    params = {
        **COMMON_PARAMS,
        "mode": Param(
            "capacity",
            "capacity: steps are fractions of a wrk-measured capacity (seed 000);"
            " absolute: rate_start + k * rate_step req/s (seed 003)",
            choices=("capacity", "absolute"),
        ),
        "start_fraction": Param(0.1, "capacity mode: first rate as a share of capacity", 0.01, 5),
        "step_fraction": Param(0.1, "capacity mode: rate step as a share of capacity", 0.01, 5),
        "max_fraction": Param(1.5, "capacity mode: highest rate as a share of capacity", 0.01, 10),
        "extend_fraction": Param(
            3.0,
            "capacity mode: a sweep whose step at max_fraction was still served in full goes"
            " on in the same steps until two in a row are not (saturated), up to this share"
            " of capacity and max_steps; at or below max_fraction it stops there, its peak a"
            " lower bound (the wrk probe can read below what the server serves under httperf)",
            0,
            10,
        ),
        "rate_start": Param(100, "absolute mode: first offered rate, req/s", 1, 10_000_000),
        "rate_step": Param(100, "absolute mode: rate increment, req/s", 1, 10_000_000),
        "max_steps": Param(30, "most steps per file size", 1, 1000),
        "step_duration": Param(2.0, "seconds of load per step", 0.5, 3600),
        "fall_steps": Param(2, "stop after this many steps below the best throughput", 1, 100),
        "error_threshold_pct": Param(10.0, "stop when errors pass this % of connections", 0, 100),
        "timeout": Param(
            5.0,
            "httperf --timeout: seconds before a request counts as failed (fixed-rate mode"
            " with clients = 0: shortened, to 1 s at the least, if the processes allowed"
            " (1 per client CPU, 16 in all, 8 per client host) cannot hold the min(rate x"
            " timeout, rate / calls_per_conn x duration) connections it may leave open)",
            0.1,
            600,
        ),
        "probe_duration": Param(2.0, "capacity mode: seconds of the wrk capacity probe", 1, 600),
        "probe_connections": Param(32, "capacity mode: wrk connections of the probe", 1, 100_000),
        "hog": Param(
            False,
            "httperf --hog: bind source ports itself (more conn/s, but leaves TIME_WAIT"
            " sockets on ports 1024-65535 that block other servers' bind() for 60 s)",
        ),
        "clients": Param(
            0,
            "httperf processes side by side, each offering its share of the rate and pinned"
            " to a client CPU, round robin (0 = one per client CPU; in fixed-rate mode as"
            " many as hold the connections a stalled server leaves open, ~1000 each, at"
            " most 1 per client CPU as each busy-polls, 16 in all, and 8 per client host"
            " shared by a cell's environments, within sshd's MaxSessions); each is checked"
            " for its 1024-socket select() limit",
            min=0,
            max=256,
        ),
        "recv_buffer": Param(
            0,
            "httperf --recv-buffer in bytes; 0 = two whole replies of the file size, at least"
            " httperf's own 16384 (with that default alone, on loopback and virtual links the"
            " client's window, not the server, limited 100 KB replies)",
            min=0,
            max=64 * 1024 * 1024,
        ),
        "server_closes": Param(
            True,
            "one request per connection: send 'Connection: close' so the server closes first"
            " and keeps the TIME_WAIT socket, as wrk's close mode does (false: httperf closes,"
            " parking a client port in TIME_WAIT for 60 s per connection)",
        ),
        "rate": Param(
            0.0,
            "fixed-rate mode: offered req/s, one step of `duration` s per file size (the"
            " co-location scenarios' load=PCT sets it); 0 = rate sweep",
            min=0,
            max=10_000_000,
        ),
        "duration": Param(10.0, "fixed-rate mode: seconds of load at `rate`", 0.5, 3600),
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        return self.run_together(platform, ctx, None)

    def run_together(
        self, platform: Platform, ctx: RunContext, party: LockstepParty | None
    ) -> list[Sample]:
        sizes = self.sizes(ctx)
        nofile = raise_nofile()
        samples: list[Sample] = []
        # series on the cell's axis: a neighbour VM booting first must not shift them
        t0 = ctx.t0 if ctx.t0 is not None else time.monotonic()
        rate = float(ctx.params.get("rate", 0) or 0)
        schedule = ctx.params.get("schedule") or {}
        with self.nginx(platform, ctx, sizes) as served:
            for size in sizes:
                state = SweepState(served, size, ctx, samples, t0, nofile, platform, party)
                if schedule:
                    self.lockstep_one(state, schedule[str(size)])
                elif rate > 0:
                    self.fixed_one(state, rate)
                else:
                    self.sweep_one(state)
        return samples

    @cached_property
    def driver(self) -> HttperfSteps:
        """The httperf side of its steps (workloads/web_httperf.py)."""
        return HttperfSteps(self)

    def what(self, st: SweepState) -> str:
        return f"{self.name} {st.size}KB"

    def fixed_one(self, st: SweepState, rate: float) -> None:
        """Fixed-rate mode: one step at `rate` for `duration` s; its throughput is the
        headline (the 'peak' of a one-step sweep), labelled phase=fixed-rate."""
        duration = float(st.ctx.params.get("duration", 10.0))
        clients = self.driver.fixed_clients(st, rate, duration)
        st.ctx.log(
            f"{self.what(st)}: {clients.processes} httperf process"
            f"{'es' if clients.processes > 1 else ''} ({clients.per_cpu} per client CPU)"
            f" hold {clients.sockets} connections; {rate:.0f} req/s x {clients.timeout:g} s"
            f" timeout can leave {rate * clients.timeout:.0f} open"
        )
        if st.ctx.remote is not None and st.ctx.remote.parties > MAX_SESSIONS:
            st.ctx.log(
                f"{self.what(st)}: {st.ctx.remote.parties} environments run their clients on"
                f" the client host at once, past the {MAX_SESSIONS} SSH sessions budgeted"
                " (sshd MaxSessions, default 10): some may start late"
            )
        step = self.driver.step(st, 0, rate, duration, "fixed-rate", clients)
        self.check_alive(st.served, self.what(st), st.samples)
        st.samples += self.headline([step], st.size, "fixed-rate", phase="fixed-rate")

    def lockstep_one(self, st: SweepState, rates: list[float]) -> None:
        """Lockstep mode: every step of the shared schedule, none skipped (the co-located
        environments wait for each other at every step, and the fall after the peak is part
        of the curve); a step whose window was not shared is invalid, and counted."""
        steps = []
        for i, rate in enumerate(rates):
            steps.append(self.driver.step(st, i, rate))
            self.check_alive(st.served, self.what(st), st.samples)
        st.samples += self.headline(steps, st.size, "schedule")

    def plan(self, ctx: RunContext, capacity: float | None) -> sweep.Plan:
        return sweep.plan_of(ctx.params, capacity, self.top_rate_param)

    def sweep_one(self, st: SweepState) -> None:
        """A rate sweep of one size (drivers/sweep.py decides its steps and when it stops)."""
        p = st.ctx.params
        what = self.what(st)
        capacity = self.capacity(st) if p.get("mode", "capacity") == "capacity" else None
        plan = self.plan(st.ctx, capacity)

        def take(i: int, rate: float) -> sweep.StepResult:
            step = self.driver.step(st, i, rate)
            self.check_alive(st.served, what, st.samples)
            return step

        steps, stopped = sweep.climb(
            plan.rates(),
            sweep.beyond(p, plan),
            take,
            int(p["fall_steps"]),
            float(p["error_threshold_pct"]) / 100,
            lambda msg: st.ctx.log(f"{what}: {msg}"),
        )
        st.samples += self.headline(steps, st.size, stopped)

    def capacity(self, st: SweepState) -> float:
        """Capacity mode: the wrk-measured req/s the sweep's rates are fractions of. A probe
        during which the guest NIC stalled is kept (flagged) and run once more on the kicked
        NIC: the sweep's rates follow from it, so a stalled probe would cap the whole sweep.
        If every probe stalled, the highest sets the scale: a stall only reads low. The probe
        that set it is labelled probe_used (measurements: docs/colocation.md, the guest NIC
        stall)."""
        p, ctx = st.ctx.params, st.ctx
        threads = len(ctx.client_cpus) if ctx.client_cpus else 1  # as many as the sweep
        probes: list[Sample] = []
        for _ in range(2):  # at most one second probe
            res, run = self.wrk_run(
                st.served,
                st.size,
                ctx,
                threads,
                int(p["probe_connections"]),
                float(p["probe_duration"]),
            )
            probe = self.sample(
                "capacity_probe", res.req_per_s, **{labelkeys.FILE_SIZE_KB: st.size}
            )
            if run.saturated:
                probe.labels[labelkeys.CLIENT_SATURATED] = f"{run.cpu_util:.0%}"
            why = wrk.invalid_reason(res, run.cpu_util)
            stall = self.stall(st.platform, ctx, f"{self.what(st)} probe")
            if why := "; ".join(w for w in (why, stall) if w):  # the rates still follow from it
                probe.labels[labelkeys.INVALID] = why
            probes.append(probe)
            st.samples += [
                probe,
                self.client_sample(
                    run, **{labelkeys.FILE_SIZE_KB: st.size, labelkeys.PHASE: "probe"}
                ),
            ]
            self.check_alive(st.served, self.what(st), st.samples)
            if stall is None:
                break
        # A clean probe stands even below a stalled one before it: it measured the server as
        # the sweep meets it (on the kicked NIC), where the stalled one is only a flagged
        # reading; run-to-run spread can put either above, and a low scale is caught later
        # (a solo peak that never saturated is measured again, wider).
        used = probes[-1] if stall is None else max(probes, key=lambda s: s.value)
        used.labels[labelkeys.PROBE_USED] = True
        if stall is not None:
            ctx.log(
                f"{self.what(st)}: every probe stalled; the sweep follows the highest,"
                f" {used.value:,.0f} req/s (a stall only reads low)"
            )
        return used.value

    @classmethod
    def unsaturated(cls, samples: list[Sample], label: str = "invalid") -> float | None:
        """SoloPeakRetry: of a solo peak's run only (an ordinary sweep is stored as it ran;
        the report labels where it stopped), drivers/sweep.py `mark_unsaturated`."""
        return sweep.mark_unsaturated(samples, label)

    def headline(
        self, steps: list[sweep.StepResult], size: int, stopped: str, phase: str | None = None
    ) -> list[Sample]:
        best = sweep.peak(steps)
        n_invalid = sum(1 for s in steps if s.invalid)
        labels: dict[str, Any] = {labelkeys.FILE_SIZE_KB: size} | (
            {labelkeys.PHASE: phase} if phase else {}
        )
        out = [
            self.sample("steps", len(steps), **labels, **{labelkeys.STOPPED: stopped}),
            self.sample("steps_invalid", n_invalid, **labels),
        ]
        if best is None:
            # no sound step: report the best raw figure, flagged, rather than nothing
            raw = max(steps, key=lambda s: s.throughput)
            labels |= {labelkeys.INVALID: "no valid step: " + (raw.invalid or "unknown")}
            best = raw
        elif why := sweep.broke_before_saturation(steps, best):
            labels |= {labelkeys.INVALID: why}
        labels |= {
            labelkeys.OFFERED_RATE: round(best.offered_rate, 1),
            labelkeys.PEAK_STEP: best.index,
        }
        out.append(self.sample("peak_throughput", best.throughput, **labels))
        out.append(self.sample("peak_offered_rate", best.offered_rate, **labels))
        return out


@register
class WrkMax(_NginxWorkload):
    name = "wrk-max"
    description = "wrk closed-loop maximum against nginx: req/s and latency percentiles"
    host_tools = ("wrk",)
    metrics = (
        Metric("requests_per_s", "req/s", True, primary=True),
        Metric("transfer", "KB/s", True),
        Metric("latency_mean_ms", "ms", False),
        Metric("latency_stdev_ms", "ms", False),
        Metric("latency_max_ms", "ms", False),
        *(Metric(f"latency_p{p:g}_ms", "ms", False) for p in wrk.PERCENTILES),
        Metric("errors", "count", False),
        Metric("errors_by_class", "count", False),
        Metric("client_cpu_pct", "%", False),
    )
    params = {
        **COMMON_PARAMS,
        "duration": Param(3.0, "seconds per file size", 1, 3600),
        "connections": Param(32, "concurrent connections", 1, 100_000),
        "threads": Param(1, "wrk threads (each pins one client CPU)", 1, 256),
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        return self.run_together(platform, ctx, None)

    def run_together(
        self, platform: Platform, ctx: RunContext, gate: LockstepParty | None
    ) -> list[Sample]:
        """StepsTogether: co-located servers run each size together, so a guest that checks
        its NIC or starts late between sizes does not shift the next size's window."""
        sizes = self.sizes(ctx)
        nofile = raise_nofile()
        p = ctx.params
        samples: list[Sample] = []
        with self.nginx(platform, ctx, sizes) as served:
            for size in sizes:
                if gate:  # every co-located environment starts this size now
                    gate.begin()
                t_start = time.monotonic()
                what = f"{self.name} {size}KB"
                try:
                    res, run = self.wrk_run(
                        served,
                        size,
                        ctx,
                        int(p["threads"]),
                        int(p["connections"]),
                        float(p["duration"]),
                    )
                except WorkloadError as exc:  # a silent server can hang wrk: say why
                    if gate:
                        gate.end(served=False)
                    stall = self.stall(platform, ctx, what)
                    if stall is None:
                        raise
                    raise WorkloadError(f"{exc}; {stall}", samples=samples) from exc
                t_end = time.monotonic()
                unshared = gate.end(served=res.req_per_s > 0, at=t_end) if gate else None
                point = {labelkeys.FILE_SIZE_KB: size, labelkeys.CONNECTIONS: int(p["connections"])}
                ctx.point(point, t_start, t_end)
                labels: dict[str, Any] = {
                    **point,
                    labelkeys.CALLS_PER_CONN: int(p.get("calls_per_conn", 1)),
                    labelkeys.CLIENT_NOFILE: nofile,
                    **(gate.labels() if gate else {}),
                }
                why = wrk.invalid_reason(res, run.cpu_util)
                stall = self.stall(platform, ctx, what)
                if why := "; ".join(w for w in (why, unshared, stall) if w):
                    labels[labelkeys.INVALID] = why
                samples += self.wrk_samples(res, run, labels)
                self.check_alive(served, what, samples)
        return samples

    def wrk_samples(self, res: wrk.WrkResult, run: ClientRun, labels: dict) -> list[Sample]:
        lat = res.latency_us
        out = [
            self.sample("requests_per_s", res.req_per_s, **labels),
            self.sample("transfer", res.kb_per_s, **labels),
            self.sample("latency_mean_ms", lat["mean"] / 1000, **labels),
            self.sample("latency_stdev_ms", lat["stdev"] / 1000, **labels),
            self.sample("latency_max_ms", lat["max"] / 1000, **labels),
            self.sample("errors", sum(res.errors.values()), **labels),
            self.client_sample(run, **labels),
        ]
        for cls, n in res.errors.items():
            if n:
                out.append(
                    self.sample("errors_by_class", n, **labels, **{labelkeys.ERROR_CLASS: cls})
                )
        for p in wrk.PERCENTILES:
            value = res.percentiles_us.get(f"{p:g}")
            if value is not None:
                out.append(self.sample(f"latency_p{p:g}_ms", value / 1000, **labels))
        return out
