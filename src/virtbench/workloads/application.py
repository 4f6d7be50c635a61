"""Application suite (seed 004 §3.5): a multi-tier application under JMeter.

The paper ran IBM DayTrader 3 (Java EE, WildFly, H2) driven by Apache JMeter 2.13, local to
the target or from another host, and after a clean database and a 180 s dry run measured 180 s
in 6 s intervals. Here: appstack/VbTrade.java, a small DayTrader-like trading servlet on
embedded Apache Tomcat 10 with an HSQLDB database (Debian's libtomcat10-java and
libhsqldb-java), runs INSIDE the environment in one JVM; Debian's JMeter 2.13 runs on the
host (or the campaign's client host) with N users and no think time. Every cell starts from a
fresh database; the figures are the measured period's throughput and response-time
percentiles, and each interval's.
"""

from __future__ import annotations

import math
import shutil
import statistics
from pathlib import Path
from typing import Any

from .. import labelkeys, ownedtmp, safefs, suites
from ..appstack import build as appstack
from ..drivers import jmeter, jvm
from ..errors import WorkloadError, WorkloadTimeout
from ..platforms.base import Platform
from ..results import NET_PATH_LABEL
from ..serving.loadgen import ClientRun, run_client
from ..serving.netpath import listen_address
from ..serving.readiness import http_probe
from ..serving.server import Served, serve
from .base import Metric, Param, RunContext, Sample, Workload
from .java import JVM_PARAMS
from .registry import register
from .scratch import Deadline, remove, scratch_dir

PCT_METRICS = tuple(Metric(f"response_time_p{p}_ms", "ms", False) for p in jmeter.PERCENTILES)
INTERVAL_PCT_METRICS = tuple(
    Metric(f"interval_response_time_p{p}_ms", "ms", False) for p in jmeter.PERCENTILES
)


@register
class DayTraderJMeter(Workload):
    suite = suites.APPLICATION
    name = "daytrader-jmeter"
    description = (
        "a DayTrader-like trading application (servlet on embedded Tomcat 10, HSQLDB, fresh"
        " database per cell) inside the environment under JMeter 2.13 users with no think"
        " time: after a dry run, throughput and response-time percentiles over the measured"
        " period and per fixed interval (seed 004: 180 s + 180 s in 6 s intervals)"
    )
    tools = ("java",)
    host_tools = ("jmeter",)
    dimension_labels = (labelkeys.INTERVAL, NET_PATH_LABEL)
    ignored_labels = (labelkeys.LATE_REQUESTS, labelkeys.CLIENT_JVM_FLAGS, labelkeys.APP_JARS)
    metrics = (
        Metric("throughput", "req/s", True, primary=True),
        Metric("response_time_mean_ms", "ms", False),
        *PCT_METRICS,
        Metric("errors", "count", False),
        Metric("error_pct", "%", False),
        Metric("dry_run_throughput", "req/s", True),
        Metric("interval_throughput", "req/s", True),
        *INTERVAL_PCT_METRICS,
        Metric("interval_throughput_cv_pct", "%", False),
        Metric("server_ready_s", "s", False),
        Metric("client_cpu_pct", "%", False),
    )
    params = {
        "users": Param(8, "JMeter threads, each a user requesting with no think time", 1, 4096),
        # 20 s: both JVMs still JIT-compile for longer than a 10 s dry run, whose first
        # interval read below the later ones (docs/application.md)
        "dry_run": Param(
            20, "seconds of load before the measured period (JIT warm-up; paper: 180)", 0, 7200
        ),
        "duration": Param(30, "seconds of the measured period (paper: 180)", 1, 7200),
        "interval": Param(6, "seconds per interval of the measured period (paper: 6)", 1, 3600),
        "accounts": Param(1000, "user accounts in the fresh database", 10, 1_000_000),
        "quotes": Param(1000, "stock quotes in the fresh database", 10, 1_000_000),
        "db": Param(
            "file",
            "file: HSQLDB's memory tables with every commit logged to a file in the environment's"
            " workdir (its default); cached: rows in its .data file too; mem: no files",
            choices=("file", "cached", "mem"),
        ),
        "max_threads": Param(200, "Tomcat's request threads (maxThreads)", 1, 10_000),
        "client_heap_mib": Param(256, "JMeter's JVM heap in MiB", 32, 1 << 20),
        "max_error_pct": Param(
            1.0, "a measured period with more failed requests (%) is invalid", 0, 100
        ),
        "request_timeout": Param(10.0, "seconds before JMeter counts a request failed", 0.1, 600),
        "ready_timeout": Param(
            180.0, "seconds the server may take to start (JVM, fresh database)", 5, 3600
        ),
        "port": Param(0, "server port inside the environment; 0 picks a free one", 0, 65535),
        **JVM_PARAMS,
    }

    # --- the server ---------------------------------------------------------------------------
    def _server_argv(self, ctx: RunContext, workdir: str, jars: list[str], bind: str | None):
        p = ctx.params
        heap = f"{int(p['heap_mib'])}m"
        flags = jvm.flags(heap, p["gc"], p["jit"])

        def make_argv(port: int) -> list[str]:
            run_dir = f"{workdir}/run-{port}"  # a retried port starts from a fresh database
            return [
                "java",
                *flags,
                f"-Djava.io.tmpdir={workdir}",
                "-cp",
                ":".join(jars),
                appstack.APP,
                str(port),
                bind or "*",
                run_dir,
                str(int(p["accounts"])),
                str(int(p["quotes"])),
                str(p["db"]),
                str(int(p["max_threads"])),
            ]

        return make_argv, jvm.labels(heap, p["gc"], p["jit"])

    def _install(self, platform: Platform, built: Path, workdir: str) -> list[str]:
        """Copy the app's jar and Debian's Tomcat and HSQLDB jars into the environment."""
        files = [built / appstack.APP_JAR, *appstack.server_jars()]
        return [platform.put_file(str(f), f"{workdir}/{f.name}", 0o644) for f in files]

    # --- the client ---------------------------------------------------------------------------
    def _client(self, served: Served, ctx: RunContext, built: Path) -> tuple[str, ClientRun]:
        """JMeter for dry run + measured period; its .jtl text and its CPU use."""
        p = ctx.params
        total = int(p["dry_run"]) + int(p["duration"])
        # host temporary files named in argv (a client host receives them: serving/remote.py)
        tmp = Path(ownedtmp.mkdtemp("jmeter", dir=safefs.private_tmp()))
        try:
            launcher = tmp / appstack.LAUNCHER_JAR
            shutil.copyfile(built / appstack.LAUNCHER_JAR, launcher)
            plan = tmp / appstack.PLAN
            plan.write_bytes(appstack.resource(appstack.PLAN))
            argv = jmeter.argv(
                str(launcher),
                str(plan),
                served.host,
                served.port,
                int(p["users"]),
                total,
                self.client_flags(ctx),
                round(float(p["request_timeout"]) * 1000),
            )
            run = run_client(argv, ctx, threads=int(p["users"]), timeout=total + 120)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        r = run.result
        if r.timed_out:  # killed at our limit (dry run + duration + 120 s), not JMeter's failure
            raise WorkloadTimeout(f"{self.name}: jmeter killed after {total + 120} s")
        jmeter.check_run(r.returncode, r.stdout, r.stderr)
        return r.stdout, run

    @staticmethod
    def client_flags(ctx: RunContext) -> list[str]:
        heap = f"{int(ctx.params['client_heap_mib'])}m"
        return [f"-Xms{heap}", f"-Xmx{heap}", "-XX:-UsePerfData"]

    # --- the cell -----------------------------------------------------------------------------
    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = Deadline(ctx.timeout)
        built = appstack.build(ctx.log)
        p = ctx.params
        workdir = scratch_dir(platform, "app")
        try:
            jars = self._install(platform, built, workdir)
            make_argv, jvm_labels = self._server_argv(
                ctx, workdir, jars, listen_address(platform, ctx)
            )
            with serve(
                platform,
                make_argv,
                ctx,
                what=f"{self.name}: Tomcat",
                port_key="suites.application.port",
                requested_port=int(p.get("port", 0)),
                probe=http_probe("/ping"),
                ready_timeout=min(float(p["ready_timeout"]), deadline.left() or math.inf),
                ready_key="suites.application.ready_timeout",
            ) as served:
                self.label_all(**{NET_PATH_LABEL: served.path})  # no ratio across paths
                text, run = self._client(served, ctx, built)
                code = served.proc.poll()
                if code is not None:
                    raise WorkloadError(f"{self.name}: the server exited (code {code}) mid-run")
                ready_s = served.ready_s
        finally:
            remove(platform, workdir)
        labels = {
            **jvm_labels,
            labelkeys.USERS: int(p["users"]),
            labelkeys.DRY_RUN_S: int(p["dry_run"]),
            labelkeys.MEASURED_S: int(p["duration"]),
            labelkeys.INTERVAL_S: int(p["interval"]),
            labelkeys.DB: p["db"],
            labelkeys.CLIENT_JVM_FLAGS: " ".join(self.client_flags(ctx)),
        }
        samples = self.results(jmeter.parse(text), run, labels, ctx)
        samples.append(self.sample("server_ready_s", ready_s, **labels))
        return samples

    def results(
        self,
        rows: list[jmeter.Row],
        run: ClientRun,
        labels: dict[str, Any],
        ctx: RunContext,
    ) -> list[Sample]:
        """Samples of one JMeter run: the measured period, its dry run, each interval."""
        p = ctx.params
        per = jmeter.periods(rows, float(p["dry_run"]), float(p["duration"]), float(p["interval"]))
        m = per.measured
        max_err = float(p["max_error_pct"])
        invalid = jmeter.invalid_reason(m, run.cpu_util, max_err)
        base = {**labels, labelkeys.LATE_REQUESTS: per.late}
        base |= {labelkeys.INVALID: invalid} if invalid else {}
        out = [
            self.sample("throughput", m.throughput, **base),
            self.sample("errors", m.errors, **base),
            self.sample("error_pct", m.error_pct, **base),
        ]
        if m.elapsed_ms:
            out.append(self.sample("response_time_mean_ms", m.mean_ms, **base))
            out += [
                self.sample(f"response_time_p{q}_ms", m.pct(q), **base) for q in jmeter.PERCENTILES
            ]
        if per.dry.seconds > 0:
            out.append(self.sample("dry_run_throughput", per.dry.throughput, **base))
        rates = [s.throughput for s in per.intervals]
        for k, s in enumerate(per.intervals):
            # an interval is invalid with its run, or alone when its own requests failed
            why = invalid or (
                f"{s.errors} of {s.completed} requests failed ({s.error_pct:.1f} %)"
                if s.error_pct > max_err
                else None
            )
            il = {**labels, labelkeys.INTERVAL: k} | ({labelkeys.INVALID: why} if why else {})
            out.append(self.sample("interval_throughput", s.throughput, **il))
            if s.elapsed_ms:
                out += [
                    self.sample(f"interval_response_time_p{q}_ms", s.pct(q), **il)
                    for q in jmeter.PERCENTILES
                ]
            t = s.t1  # seconds since JMeter's first request
            ctx.series("interval_throughput", t, s.throughput, "req/s", "target")
            if s.elapsed_ms:
                ctx.series("interval_response_time_p99_ms", t, s.pct(99), "ms", "target")
        if len(rates) > 1 and statistics.fmean(rates) > 0:
            cv = 100 * statistics.stdev(rates) / statistics.fmean(rates)
            out.append(self.sample("interval_throughput_cv_pct", cv, **base))
        client = self.sample("client_cpu_pct", 100 * run.cpu_util, **base)
        client.role = "client"
        out.append(client)
        ctx.log(
            f"{self.name}: {m.throughput:.0f} req/s over {m.seconds:.0f} s, p50"
            f" {m.pct(50):.1f} ms p99 {m.pct(99):.1f} ms, {m.errors} errors, JMeter at"
            f" {run.cpu_util:.0%} of its CPUs" + (f" (invalid: {invalid})" if invalid else "")
        )
        return out
