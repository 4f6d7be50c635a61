"""Network suite (seed 002): iperf3 TCP/UDP throughput and sockperf request/response round
trips (netperf's TCP_RR/UDP_RR; netperf is not in Debian). The server runs inside the
environment, the client on the host (or in its own netns on virtbench's bridge, or on a
client host: `client_path`, serving/netpath.py), reaching it at `platform.endpoint(port)`."""

from __future__ import annotations

import time
from typing import Any

from .. import labelkeys, suites
from ..drivers import iperf3, sockperf
from ..errors import WorkloadTimeout
from ..platforms.base import Platform
from ..results import NET_PATH_LABEL
from ..serving import netpath
from ..serving.loadgen import ClientRun, raise_nofile, run_client
from ..serving.netpath import listen_address
from ..serving.readiness import READY_TIMEOUT_S
from ..serving.server import serve
from .base import Metric, Param, RunContext, Sample, Workload
from .registry import register

PORT_PARAM = Param(0, "server port inside the environment; 0 picks a free one", min=0, max=65535)
# where the load generator runs and how it reaches the server (serving/netpath.py); every
# sample records the path it took (label net_path), and no ratio crosses two paths
CLIENT_PATH_PARAM = Param(netpath.HOST, netpath.HELP, choices=netpath.CLIENT_PATHS)
DURATION_PARAM = Param(3.0, "seconds per run", min=1, max=3600)


class _NetWorkload(Workload):
    suite = suites.NETWORK
    dimension_labels = (
        labelkeys.PROTOCOL,
        labelkeys.MESSAGE_SIZE_BYTES,
        labelkeys.RATE,
        NET_PATH_LABEL,
    )

    def client_sample(self, run: ClientRun, **labels: Any) -> Sample:
        s = self.sample("client_cpu_pct", 100 * run.cpu_util, **labels)
        s.role = "client"
        if run.saturated:
            s.labels[labelkeys.CLIENT_SATURATED] = True
        return s


# --- iperf3 ---------------------------------------------------------------------------
def _iperf3_metrics(*extra: Metric) -> tuple[Metric, ...]:
    """What both iperf3 test cases report, with their own `extra` figures in the middle."""
    return (
        Metric("throughput", "Mbit/s", True, primary=True),
        Metric("sent", "Mbit/s", True),
        *extra,
        Metric("server_cpu_pct", "%", False),
        Metric("client_cpu_pct", "%", False),
    )


class _Iperf3(_NetWorkload):
    tools = ("iperf3",)
    host_tools = ("iperf3",)
    udp = False
    params = {
        "duration": DURATION_PARAM,
        "streams": Param(1, "parallel streams (-P)", min=1, max=128),
        "reverse": Param(False, "server sends to the client (-R) instead of receiving"),
        "port": PORT_PARAM,
        "client_path": CLIENT_PATH_PARAM,
    }

    def client_argv(self, host: str, port: int, ctx: RunContext) -> list[str]:
        p = ctx.params
        mbps = p.get("bitrate_mbps", 0) if self.udp else None
        return iperf3.client_argv(
            host, port, p["duration"], p["streams"], bool(p.get("reverse")), udp_mbps=mbps
        )

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        raise_nofile()
        with serve(
            platform,
            lambda port: iperf3.server_argv(port, listen_address(platform, ctx)),
            ctx,
            what=f"{self.name}: iperf3 server",
            port_key="suites.network.port",
            requested_port=int(ctx.params.get("port", 0)),
            listen="tcp",  # a probe connection would start (and abort) an iperf3 test
        ) as served:
            self.label_all(**{NET_PATH_LABEL: served.path})
            argv = self.client_argv(served.host, served.port, ctx)
            run, attempts = self.connect_and_run(argv, ctx)
        if run.result.timed_out:
            raise WorkloadTimeout(f"{self.name}: iperf3 client timed out")
        res = iperf3.parse(run.result.stdout)
        out = self.samples_from(res, run, ctx)
        if attempts > 1:  # visible, not hidden: the path needed time (e.g. a stale neighbour)
            for s in out:
                s.labels[labelkeys.CONNECT_ATTEMPTS] = attempts
        return out

    def connect_and_run(self, argv: list[str], ctx: RunContext) -> tuple[ClientRun, int]:
        """Run the iperf3 client, retrying while it could not even connect (nothing reached
        the server, so nothing is disturbed) for up to READY_TIMEOUT_S. The server's
        readiness was checked from inside the environment; this is the client's path to it
        (a new bridge address whose previous owner's MAC the host still holds blackholes
        the first tens of seconds)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        attempts = 0
        while True:
            attempts += 1
            run = run_client(argv, ctx, timeout=float(ctx.params["duration"]) + 60)
            text = run.result.stdout + run.result.stderr
            if run.result.ok or iperf3.UNABLE_TO_CONNECT not in text or time.monotonic() > deadline:
                return run, attempts
            ctx.log(f"{self.name}: iperf3 could not connect (attempt {attempts}); retrying")
            time.sleep(0.2)

    def samples_from(self, res: dict[str, Any], run: ClientRun, ctx: RunContext) -> list[Sample]:
        labels: dict[str, Any] = {
            labelkeys.STREAMS: ctx.params["streams"],
            labelkeys.REVERSE: bool(ctx.params.get("reverse")),
        }
        if why := iperf3.invalid_reason(res, run.cpu_util):
            labels[labelkeys.INVALID] = why
        labels[labelkeys.CPU_LIMIT] = iperf3.cpu_limit(run.cpu_util, res.get("server_cpu_pct"))
        out = [
            self.sample("throughput", res["received_bps"] / 1e6, **labels),
            self.sample("sent", res["sent_bps"] / 1e6, **labels),
            self.client_sample(run, **labels),
        ]
        if res.get("server_cpu_pct") is not None:
            out.append(self.sample("server_cpu_pct", res["server_cpu_pct"], **labels))
        for key in self.extra_metrics:
            if res.get(key) is not None:
                out.append(self.sample(key, res[key], **labels))
        return out

    extra_metrics: tuple[str, ...] = ()


@register
class Iperf3Tcp(_Iperf3):
    name = "iperf3-tcp"
    description = "iperf3 TCP bulk throughput, client on the host -> server inside"
    metrics = _iperf3_metrics(Metric("retransmits", "count", False))
    extra_metrics = ("retransmits",)


@register
class Iperf3Udp(_Iperf3):
    name = "iperf3-udp"
    description = "iperf3 UDP throughput received inside, with loss and jitter"
    udp = True
    metrics = _iperf3_metrics(Metric("lost_percent", "%", False), Metric("jitter_ms", "ms", False))
    extra_metrics = ("lost_percent", "jitter_ms")
    params = {
        **_Iperf3.params,
        "bitrate_mbps": Param(0, "UDP send rate in Mbit/s per stream; 0 = unlimited", 0, 1e6),
    }


# --- sockperf ---------------------------------------------------------------------------
# round-trip figures of sockperf's summary, in µs (rtt_<figure>_us); mean is the headline
_RTT_FIGURES = ("mean", "p50", "p99", "p99.9", "stddev", "max")


class _Sockperf(_NetWorkload):
    tools = ("sockperf",)
    host_tools = ("sockperf",)
    tcp = True
    metrics = (
        *(Metric(f"rtt_{k}_us", "us", False, primary=k == "mean") for k in _RTT_FIGURES),
        Metric("transactions_per_s", "trans/s", True),
        Metric("dropped", "count", False),
        Metric("client_cpu_pct", "%", False),
    )
    params = {
        # sockperf discards the first 400 ms and the edges of the run: 1 s is often empty
        "duration": Param(3.0, "seconds per run", min=2, max=3600),
        "msg_size": Param(64, "request and response size in bytes", min=14, max=65000),
        "port": PORT_PARAM,
        "client_path": CLIENT_PATH_PARAM,
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        p = ctx.params
        with serve(
            platform,
            lambda port: sockperf.server_argv(port, self.tcp, listen_address(platform, ctx)),
            ctx,
            what=f"{self.name}: sockperf server",
            port_key="suites.network.port",
            requested_port=int(p.get("port", 0)),
            # TCP: a connect also proves the path (sockperf shrugs it off); UDP: its socket
            listen=None if self.tcp else "udp",
            settle_s=0.5,
        ) as served:
            self.label_all(**{NET_PATH_LABEL: served.path})
            argv = sockperf.client_argv(
                served.host, served.port, self.tcp, p["duration"], p["msg_size"]
            )
            run = run_client(argv, ctx, timeout=float(p["duration"]) + 60)
        if run.result.timed_out:  # killed at our limit: its partial output has no summary
            raise WorkloadTimeout(f"{self.name}: sockperf client timed out")
        res = sockperf.parse(run.result.stdout + "\n" + run.result.stderr)
        labels: dict[str, Any] = {labelkeys.MSG_SIZE: p["msg_size"]}
        if why := sockperf.invalid_reason(res, run.cpu_util):
            labels[labelkeys.INVALID] = why
        out = [
            self.sample("rtt_mean_us", res["mean"], **labels),
            self.sample("rtt_stddev_us", res["stddev"], **labels),
            self.sample("transactions_per_s", res["received"] / res["runtime_s"], **labels),
            self.sample("dropped", res["dropped"], **labels),
            self.client_sample(run, **labels),
        ]
        for key in ("p50", "p99", "p99.9", "max"):
            if key in res:
                out.append(self.sample(f"rtt_{key}_us", res[key], **labels))
        return out


@register
class SockperfTcpRR(_Sockperf):
    name = "sockperf-tcp-rr"
    description = "TCP request/response round trip (netperf TCP_RR) with sockperf ping-pong"


@register
class SockperfUdpRR(_Sockperf):
    name = "sockperf-udp-rr"
    description = "UDP request/response round trip (netperf UDP_RR) with sockperf ping-pong"
    tcp = False
