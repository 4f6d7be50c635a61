"""The httperf side of the web suite's rate sweep (workloads/web.py `HttperfSweep`): one
step offered by httperf processes on the client CPUs, judged, labelled and recorded. What
steps a sweep takes and when it stops is drivers/sweep.py's; this module only drives the tool.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import labelkeys
from ..drivers import httperf, nginx, sweep
from ..drivers.sweep import LockstepParty
from ..errors import WorkloadError, WorkloadTimeout
from ..platforms.base import Platform
from ..serving.loadgen import (
    ParallelRun,
    client_cpu_count,
    client_slots,
    process_limit,
    run_clients,
)
from ..serving.server import Served
from ..validity import first, http_errors
from .base import RunContext, Sample

if TYPE_CHECKING:
    from .web import HttperfSweep


@dataclass
class SweepState:
    """What every step of one file size's sweep shares."""

    served: Served
    size: int  # file size in KB
    ctx: RunContext
    samples: list[Sample]  # each step appends its own (kept if the server dies mid-sweep)
    t0: float  # monotonic start of the run: time series points count from here
    nofile: int  # the client's fd limit, labelled on every step
    platform: Platform | None = None  # asked after every run whether its network stalled
    # co-located environments stepping together (StepsTogether): begin() / end() around
    # each step; None when it runs alone
    gate: LockstepParty | None = None

    @property
    def calls(self) -> int:
        return int(self.ctx.params.get("calls_per_conn", 1))

    @property
    def server_closes(self) -> bool:
        return bool(self.ctx.params.get("server_closes", True))

    @property
    def recv_bytes(self) -> int:
        """httperf's --recv-buffer: the `recv_buffer` param, else two replies of this size."""
        return int(self.ctx.params.get("recv_buffer") or 0) or httperf.recv_buffer(self.size)


class HttperfSteps:
    """The steps of `w`'s sweeps, each offered by httperf (its samples are `w`'s)."""

    def __init__(self, w: HttperfSweep) -> None:
        self.w = w

    @staticmethod
    def fixed_clients(st: SweepState, rate: float, duration: float) -> httperf.Clients:
        """The httperf processes and --timeout of a fixed-rate step: `clients` if set (the
        user's count stands; a step that runs out of sockets is flagged invalid), else
        sized to the rate (httperf.size_clients): a fixed rate is offered even while the
        server falls behind (a start-up storm), and every connection it then leaves open
        needs a socket; at most httperf.MAX_PER_CPU per client CPU (they busy-poll), and on
        a client host the cell's share of its SSH sessions (loadgen.process_limit). A sweep
        keeps one process per client CPU: its sockets run out only past the saturation it
        stops at."""
        p = st.ctx.params
        timeout = float(p["timeout"])
        forced = int(p.get("clients", 0))
        cpus = client_cpu_count(st.ctx)
        if forced:
            sockets = forced * httperf.sockets_per_process(st.nofile)
            return httperf.Clients(forced, timeout, sockets, cpus)
        base = len(client_slots(st.ctx, 0))  # one per client CPU, as a sweep's
        limit = process_limit(st.ctx) or httperf.MAX_PROCESSES
        return httperf.size_clients(
            rate,
            timeout,
            base,
            st.nofile,
            calls=st.calls,
            duration=duration,
            cpus=cpus,
            limit=limit,
        )

    def step(
        self,
        st: SweepState,
        index: int,
        rate: float,
        duration: float | None = None,
        phase: str | None = None,
        clients: httperf.Clients | None = None,
    ) -> sweep.StepResult:
        """Offer `rate` req/s for `duration` s (default: step_duration) and record the step;
        with `clients` (a fixed-rate step) on those processes and timeout, else on the
        `clients` and `timeout` params."""
        duration = float(st.ctx.params["step_duration"]) if duration is None else duration
        processes = clients.processes if clients else int(st.ctx.params.get("clients", 0))
        slots = client_slots(st.ctx, processes)
        load = httperf.split_load(rate / st.calls, duration, len(slots))
        gate = st.gate
        if gate:  # every co-located environment starts this step now
            gate.begin()
        t_start = time.monotonic()
        try:
            timeout = clients.timeout if clients else None
            par = self.offer(st, rate, load, slots[: len(load.shares)], duration, timeout)
        except BaseException:
            if gate:
                gate.end(served=False)
            raise
        t_end = time.monotonic()
        point = {labelkeys.FILE_SIZE_KB: st.size, labelkeys.STEP: index} | (
            {labelkeys.PHASE: phase} if phase else {}
        )
        st.ctx.point(point, t_start, t_end)
        parts = [httperf.parse(run.result.stdout) for run in par.runs]
        r = httperf.combine(parts)
        # a partner that served nothing (a dead server, a stalled NIC) leaves this step alone
        unshared = gate.end(served=r.throughput > 0, at=t_end) if gate else None
        invalid = self.verdict(parts, load.rates, par, r, load.conn_rate)
        stall = self.w.stall(st.platform, st.ctx, f"{self.w.what(st)} step {index}")
        invalid = "; ".join(w for w in (invalid, unshared, stall) if w) or None
        labels = self.step_labels(st, index, rate, len(parts), r, invalid, phase)
        labels |= gate.labels() if gate else {}
        # a sweep's labels stay as they were; a fixed step's say what ran (split_load)
        labels |= clients.ran(len(parts)).labels() if clients else {}
        values = self.step_values(r, rate)
        self.record(st, labels, values, r, par)
        st.ctx.log(
            f"{self.w.what(st)} step {index}: offered {rate:.0f} -> {r.throughput:.0f}"
            f" req/s ({len(parts)} httperf at {par.cpu_util:.0%} of the busiest client CPU,"
            f" which was {par.cpu_busy:.0%} busy in all)"
            + (f" (invalid: {invalid})" if invalid else "")
        )
        return sweep.StepResult(index, rate, r.throughput, r.errors_total, r.attempts, invalid)

    def offer(
        self,
        st: SweepState,
        rate: float,
        load: httperf.Load,
        slots: list[list[int] | None],
        duration: float,
        timeout: float | None = None,
    ) -> ParallelRun:
        """Run the step's httperf processes side by side (--timeout `timeout`, default the
        `timeout` param); any that failed fails the step."""
        p = st.ctx.params
        timeout = float(p["timeout"]) if timeout is None else timeout
        argvs = [
            httperf.argv(
                st.served.host,
                st.served.port,
                nginx.uri(st.size),
                r,
                n,
                st.calls,
                timeout,
                bool(p.get("hog", False)),
                st.server_closes,
                st.recv_bytes,
            )
            for r, n in zip(load.rates, load.shares, strict=True)
        ]
        # start the processes 1/rate apart so their equal schedules interleave, not coincide
        stagger = min(0.05, 1 / max(load.conn_rate, 1))
        par = run_clients(argvs, slots, timeout=duration * 3 + 60, stagger_s=stagger, ctx=st.ctx)
        for i, run in enumerate(par.runs):
            if not run.result.ok:
                tail = (run.result.stderr or run.result.stdout).strip().splitlines()[-3:]
                error = WorkloadTimeout if run.result.timed_out else WorkloadError
                raise error(
                    f"{self.w.name}: httperf {i + 1}/{len(par.runs)} failed at {rate:.0f} req/s:"
                    f" {' | '.join(tail)}",
                    samples=st.samples,
                )
        return par

    @staticmethod
    def step_labels(
        st: SweepState,
        index: int,
        rate: float,
        clients: int,
        r: httperf.HttperfResult,
        invalid: str | None,
        phase: str | None,
    ) -> dict[str, Any]:
        labels: dict[str, Any] = {
            labelkeys.STEP: index,
            labelkeys.OFFERED_RATE: round(rate, 1),
            labelkeys.FILE_SIZE_KB: st.size,
            labelkeys.CALLS_PER_CONN: st.calls,
            labelkeys.CLIENT_NOFILE: st.nofile,
            labelkeys.CLIENT_RECV_BUFFER: st.recv_bytes,
            labelkeys.CLIENTS: clients,
        }
        if st.calls == 1:
            labels[labelkeys.CLOSES] = "server" if st.server_closes else "client"
        if phase:
            labels[labelkeys.PHASE] = phase
        if r.starved:  # below the tolerance it is not invalid, but it must stay visible
            labels[labelkeys.CLIENT_ERRORS] = r.starved
        if invalid:
            labels[labelkeys.INVALID] = invalid
        return labels

    @staticmethod
    def step_values(r: httperf.HttperfResult, rate: float) -> dict[str, float]:
        values = {
            "offered_rate": rate,
            "reply_rate": r.throughput,
            "send_rate": r.send_rate(),
            "reply_time_ms": r.reply_time_ms,
            "transfer_time_ms": r.transfer_time_ms,
            "connection_time_ms": r.conn_time_avg_ms,
            "connect_time_ms": r.connect_time_ms,
            "net_throughput": r.net_kb_s,
            "errors": r.errors_total,
            "error_pct": 100 * r.errors_total / max(r.attempts, 1),
            "replies_non_2xx": r.replies - r.status.get("2xx", 0),
        }
        if r.reply_rate_samples:  # httperf samples the reply rate only every 5 s
            values |= {
                "reply_rate_min": r.reply_rate_min,
                "reply_rate_max": r.reply_rate_max,
                "reply_rate_stddev": r.reply_rate_stddev,
            }
        values["max_connect_burst"] = r.max_burst
        return values

    def record(
        self,
        st: SweepState,
        labels: dict[str, Any],
        values: dict[str, float],
        r: httperf.HttperfResult,
        par: ParallelRun,
    ) -> None:
        """The step's samples (target figures, errors by class, the client's CPU) and its
        time series points."""
        for metric, value in values.items():
            st.samples.append(self.w.sample(metric, value, **labels))
        for cls, n in r.errors.items():
            if n:
                st.samples.append(
                    self.w.sample("errors_by_class", n, **labels, **{labelkeys.ERROR_CLASS: cls})
                )
        client = self.w.client_sample(par, **labels)
        client.labels[labelkeys.CLIENT_CPUS_BUSY_PCT] = round(100 * par.cpu_busy, 1)
        st.samples.append(client)
        t = time.monotonic() - st.t0
        for metric, unit in (("offered_rate", "req/s"), ("reply_rate", "req/s")):
            st.ctx.series(f"{metric}.{st.size}KB", t, values[metric], unit, "target")
        st.ctx.series(f"client_cpu_pct.{st.size}KB", t, client.value, "%", "client")

    @staticmethod
    def verdict(
        parts: list[httperf.HttperfResult],
        rates: list[float],
        par: ParallelRun,
        merged: httperf.HttperfResult,
        conn_rate: float,
    ) -> str | None:
        """Why the step measured the client, not the server: each httperf process is judged
        on its own (its CPU, its sockets, its send rate), then all of them together."""
        ok = merged.status.get("2xx", 0) + merged.status.get("3xx", 0)
        errors = http_errors(merged.replies - ok, merged.replies)
        if len(parts) == 1:
            return first(httperf.invalid_reason(parts[0], rates[0], par.runs[0].cpu_util), errors)
        k = len(parts)
        reasons = [
            f"httperf {i + 1}/{k}: {why}"
            for i, (r, rate, run) in enumerate(zip(parts, rates, par.runs, strict=True))
            if (why := httperf.invalid_reason(r, rate, run.cpu_util))
        ]
        if not reasons and (why := httperf.invalid_reason(merged, conn_rate, par.cpu_util)):
            reasons.append(f"all {k} httperf processes: {why}")
        return "; ".join([*reasons, *([errors] if errors else [])]) or None
