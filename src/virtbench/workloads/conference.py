"""Conference suite (seed 002's macro benchmark): a conferencing media server inside the
environment under test, users joining it one at a time, and the environment's resource
curves against the number of connected users (seed 002 Figs. 1-3).

Server: nginx with Debian's RTMP module (drivers/rtmp.py); BigBlueButton 0.81 carried its
webcams over RTMP. Users: ffmpeg on the host's client CPUs (serving/streams.py). The first
`publish` users send a synthetic webcam (drivers/ffmpeg.py), the first of them also shares a
"desktop"; every user plays every other user's streams without decoding. A new user joins
every `join_interval` seconds; each step (one user count) is measured after `settle` seconds
until the next join. The environment's CPU, memory and network per step come from the cell's
sampler (the solo scenario reads this suite in detail, per point `users`); this module adds
what the viewers saw (frames delivered, added delay), the server's RTMP bytes in and out as
its clients counted them (a host-network environment has no interface of its own), and the
clients' own CPU (a saturated client invalidates the step and ends the run).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import labelkeys, suites
from ..cgroups.layout import parse_kv, safe_read, walk_files
from ..drivers import ffmpeg, rtmp
from ..errors import WorkloadError
from ..platforms.base import Platform
from ..ports import is_loopback
from ..results import NET_PATH_LABEL
from ..serving import netpath
from ..serving.loadgen import client_slots
from ..serving.netpath import listen_address
from ..serving.remote_streams import RemoteUsers
from ..serving.server import Served, serve
from ..serving.streams import LocalUsers, StreamClient, Usage, bytes_between
from ..validity import CLIENT_SATURATED, client_limit
from .base import Metric, Param, RunContext, Sample, Workload
from .network import CLIENT_PATH_PARAM
from .registry import register

# The desktop share of the first user (seed 002: "the first connected user also shares his
# own desktop screen"): a larger, slower stream, as screen sharing is.
DESKTOP = {"size": "800x600", "fps": 5}
STOP_MAX_USERS = "max_users reached"
# A step whose server was throttled (its CFS quota ran out) in more than this share of its
# periods ran at its CPU budget: its CPU is the budget, not what the users cost, so the cost
# per user leaves it out (analysis/conference.py). Measured (1 % budget, native): below the
# cap nginx-rtmp was throttled in a few % of its periods, at the cap in most.
BUDGET_BOUND = 0.25


@dataclass
class Step:
    """What one user count measured."""

    users: int
    streams: int  # viewed streams (viewer processes)
    # share of the frames sent that the viewers received, pooled over the viewed streams
    # (measure_step: the higher of two estimates; a dropped frame lowers both)
    delivery: float | None
    delivered_fps: float | None  # mean per viewed stream
    delay_ms: float | None  # mean over viewed streams of each one's worst added delay
    delay_max_ms: float | None
    in_kbps: float
    out_kbps: float
    client_busiest: float  # 0..1 of the busiest client CPU, by the clients' own CPU time
    client_total_pct: float  # all clients' CPU, % of one CPU
    # how far the slowest publisher fell behind its `-re` pace (its lag's growth): a server
    # that stops reading holds its publishers back over TCP, and then the frames sent and
    # the viewers' lag behind them both look normal. A lag, not a frame rate: a 5 fps
    # stream's rate over a few seconds of 0.5 s blocks is off by a frame, 10 % and more
    publish_lag_ms: float | None = None
    throttled: float | None = None  # share of the server's CFS periods its quota ran out


def server_verdict(step: Step, min_delivery: float, max_delay_ms: float) -> str | None:
    """Why the server is saturated at this step (None: it served every viewer). Called for
    steps whose clients were healthy: a publisher held back is then the server's doing."""
    if step.publish_lag_ms is not None and step.publish_lag_ms > max_delay_ms:
        return (
            f"publishers held back: one fell {step.publish_lag_ms:.0f} ms behind its pace"
            f" > max_delay_ms {max_delay_ms:.0f}"
        )
    if step.streams and step.delivery is not None and step.delivery < min_delivery:
        return f"frames delivered {step.delivery:.1%} of sent < min_delivery {min_delivery:.0%}"
    if step.delay_max_ms is not None and step.delay_max_ms > max_delay_ms:
        return f"viewer delay {step.delay_max_ms:.0f} ms > max_delay_ms {max_delay_ms:.0f}"
    return None


def measure_step(
    users: int,
    clients: list[StreamClient],
    before: dict[int, Usage],
    after: dict[int, Usage],
    sockets: tuple[int, int],
    publishers: dict[str, StreamClient],
    a: float,
    b: float,
    cpu_count: int | None = None,
) -> Step:
    """The step's figures from the clients' progress blocks in [a, b], their CPU counters and
    `sockets`: the bytes their sockets sent to and received from the server in [a, b];
    `cpu_count`: the CPUs unpinned clients share (default: this process's)."""
    dt = max(b - a, 1e-6)
    viewers = [c for c in clients if c.kind == "play"]
    received = sent = 0.0
    fps_each, delays = [], []
    for v in viewers:
        pub = publishers[v.stream]
        got, want = ffmpeg.fps(v.progress, a, b) or 0.0, ffmpeg.fps(pub.progress, a, b)
        fps_each.append(got)
        if want:
            # two estimates, each low only in its own benign case (frame rates: late frames at
            # the window's edge; frames per stream time: the viewer's timestamps settling
            # after it joined); a frame the server dropped lowers both: take the higher
            frames = ffmpeg.frames_delivered(v.progress, pub.progress, a, b)
            by_pts = frames[0] / frames[1] if frames and frames[1] > 0 else 0.0
            received, sent = received + want * max(got / want, by_pts), sent + want
        d = ffmpeg.worst_added_delay_s(v.progress, pub.progress, a, b)
        if d is not None:
            delays.append(1000 * d)

    per_cpu: dict[tuple[int, ...], float] = {}
    for c in clients:
        if id(c) in before and id(c) in after:
            key = tuple(c.cpus or ())
            per_cpu[key] = per_cpu.get(key, 0.0) + after[id(c)].cpu_s - before[id(c)].cpu_s
    # clients without client CPUs are judged together against the CPUs they may use
    unpinned = per_cpu.pop((), 0.0)
    shares = [v / len(k) for k, v in per_cpu.items()]
    spread = cpu_count or len(os.sched_getaffinity(0))
    busiest = max([*shares, unpinned / max(1, spread)]) / dt
    lags = [ffmpeg.worst_lag_s(pub.progress, a, b) for pub in publishers.values()]
    known = [lag for lag in lags if lag is not None]
    return Step(
        users=users,
        streams=len(viewers),
        delivery=received / sent if sent else None,
        delivered_fps=statistics.fmean(fps_each) if fps_each else None,
        delay_ms=statistics.fmean(delays) if delays else None,
        delay_max_ms=max(delays) if delays else None,
        in_kbps=8 * sockets[0] / dt / 1000,
        out_kbps=8 * sockets[1] / dt / 1000,
        client_busiest=busiest,
        client_total_pct=100 * (sum(per_cpu.values()) + unpinned) / dt,
        publish_lag_ms=1000 * max(known) if known else None,
    )


def open_users(ctx: RunContext) -> LocalUsers | RemoteUsers:
    """Where the users run: the client host (its agent over SSH) or this host's client
    CPUs on the cell's client path."""
    if ctx.remote is not None:
        return RemoteUsers(ctx.remote)
    return LocalUsers(lambda argv: netpath.wrap(argv, ctx))


def bind_address(platform: Platform, ctx: RunContext) -> str | None:
    """The one address nginx listens on: the one its users reach it at. With a client host
    a server on the host's loopback (native, a host-network container) binds the address
    the client host reaches this host at, not every address as listen_address leaves it
    (that is for servers probed over loopback; this one is probed by its listening socket)."""
    bind = listen_address(platform, ctx)
    inner = platform.listen_address()
    if bind is None and ctx.remote is not None and inner is not None and is_loopback(inner):
        return ctx.remote.client.target_address
    return bind


def throttle_reader(platform: Platform) -> Callable[[], dict[str, int]]:
    """What reads the server's CFS counters (nr_periods, nr_throttled): its shared CPU
    budget's group, else its own cpu cgroup and the groups inside it, summed (the quota may
    sit in one of them: LXC sets it on its payload group inside the container's); {}
    where it has none."""
    budget = platform.cpu_budget()
    if budget is not None:
        return budget.throttled
    groups = platform.accounting().cgroups
    where = groups.get("cpu") or groups.get("unified")
    if not where:
        return dict

    def read() -> dict[str, int]:
        total: dict[str, int] = {}
        for stat in walk_files(Path(where), "cpu.stat"):
            for key, value in parse_kv(safe_read(stat)).items():
                total[key] = total.get(key, 0) + value
        return total

    return read


def throttled_share(before: dict[str, int], after: dict[str, int]) -> float | None:
    """Share of the CFS periods between two cpu.stat readings in which the quota ran out
    (None: no quota, or no period passed)."""
    periods = after.get("nr_periods", 0) - before.get("nr_periods", 0)
    if periods <= 0:
        return None
    return (after.get("nr_throttled", 0) - before.get("nr_throttled", 0)) / periods


@register
class ConferenceRtmp(Workload):
    suite = suites.CONFERENCE
    name = "conference-rtmp"
    description = (
        "nginx-rtmp media server; ffmpeg users join one at a time, each publishing a webcam"
        " (the first `publish`) and playing the others' streams: resources per user count"
    )
    tools = ("nginx",)
    host_tools = ("ffmpeg",)
    metrics = (
        Metric("users_served", "users", True, primary=True),
        Metric("delivery_ratio", "ratio", True),
        Metric("delivered_fps", "frames/s", True),
        Metric("delay_ms", "ms", False),
        Metric("delay_max_ms", "ms", False),
        Metric("server_in_kbps", "kbit/s", True),
        Metric("server_out_kbps", "kbit/s", True),
        Metric("streams_viewed", "streams", True),
        Metric("client_cpu_pct", "%", False),
        Metric("client_cpu_total_pct", "%", False),
    )
    # a step is identified by its user count; the rest are facts of the step or the run
    dimension_labels = (labelkeys.USERS, NET_PATH_LABEL)
    ignored_labels = (labelkeys.STOPPED, labelkeys.PUBLISHERS, labelkeys.STREAMS, labelkeys.BOUND)
    ignored_labels += (labelkeys.SATURATED, labelkeys.CLIENT_LIMIT)
    ignored_labels += (labelkeys.CPU_THROTTLED, labelkeys.BUDGET_BOUND)
    params = {
        "join_interval": Param(30.0, "seconds between two users joining (seed 002: 30)", 2, 3600),
        "settle": Param(
            3.0, "seconds after a join before the step is measured (viewers connect)", 0.5, 600
        ),
        "max_users": Param(40, "stop after this many users (seed 002: 340)", 1, 2000),
        "publish": Param(
            8, "users that send a webcam: the first to join (seed 002: 8); 0 = all", 0, 2000
        ),
        "desktop": Param(True, "the first user also shares a desktop stream (seed 002)"),
        "video_size": Param("320x240", "webcam frame size", choices=ffmpeg.VIDEO_SIZES),
        "fps": Param(15, "webcam frames per second", 1, 60),
        "bitrate_kbps": Param(256, "webcam bitrate in kbit/s", 16, 20_000),
        "codec": Param(
            "flv",
            "flv = Sorenson Spark (Flash webcams), libx264 = H.264",
            choices=("flv", "libx264"),
        ),
        "min_delivery": Param(
            0.95, "saturated below this share of sent frames reaching viewers", 0.01, 1.0
        ),
        "max_delay_ms": Param(1000.0, "saturated above this added viewer delay (ms)", 10, 600_000),
        "port": Param(0, "RTMP port inside the environment; 0 picks a free one", 0, 65535),
        "client_path": CLIENT_PATH_PARAM,
    }
    param_order = (("settle", "join_interval"),)

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        p = ctx.params
        ffmpeg.check_encoder(str(p["codec"]))
        webcam = ffmpeg.StreamSpec(
            str(p["video_size"]), int(p["fps"]), int(p["bitrate_kbps"]), str(p["codec"])
        )
        desktop = ffmpeg.StreamSpec(
            DESKTOP["size"], DESKTOP["fps"], webcam.bitrate_kbps, webcam.codec
        )
        max_users, interval = int(p["max_users"]), float(p["join_interval"])
        # a client that outlives us by accident ends on its own
        max_s = max_users * interval + 120

        def make_argv(port: int) -> list[str]:
            root, conf = rtmp.prepare(platform, port, bind_address(platform, ctx))
            return ["nginx", "-p", root, "-c", conf, "-e", f"{root}/error.log"]

        with serve(
            platform,
            make_argv,
            ctx,
            what=f"{self.name}: nginx-rtmp",
            port_key="suites.conference.port",
            requested_port=int(p.get("port", 0)),
            listen="tcp",  # an RTMP handshake probe would count as a client
        ) as served:
            self.label_all(**{NET_PATH_LABEL: served.path})
            return self.conference(served, ctx, webcam, desktop, max_s, throttle_reader(platform))

    def conference(
        self,
        served: Served,
        ctx: RunContext,
        webcam: ffmpeg.StreamSpec,
        desktop: ffmpeg.StreamSpec,
        max_s: float,
        throttle: Callable[[], dict[str, int]],
    ) -> list[Sample]:
        p = ctx.params
        max_users, interval = int(p["max_users"]), float(p["join_interval"])
        settle = float(p["settle"])
        publish = int(p["publish"]) or max_users
        slots = client_slots(ctx, 0)
        clients: list[Any] = []  # StreamClient here, RemoteStreamClient on a client host
        publishers: dict[str, Any] = {}
        samples: list[Sample] = []
        stopped, served_users = STOP_MAX_USERS, 0
        users = open_users(ctx)

        def start(argv: list[str], kind: str, user: int, stream: str) -> StreamClient:
            cpus = slots[len(clients) % len(slots)]
            try:
                c = users.start(argv, cpus, kind, user, stream)
            except FileNotFoundError as exc:
                raise WorkloadError(
                    f"{self.name}: {argv[0]} not found on the host: apt-get install ffmpeg",
                    samples=samples,
                ) from exc
            except WorkloadError as exc:  # the client host's: keep the steps measured
                raise WorkloadError(f"{self.name}: {exc}", samples=samples) from exc
            clients.append(c)
            return c

        def url(stream: str) -> str:
            return rtmp.url(served.host, served.port, stream)

        try:
            for n in range(1, max_users + 1):
                t_join = time.monotonic()
                new: list[str] = []
                if n <= publish:
                    new.append(f"u{n}")
                    if n == 1 and p.get("desktop", True):
                        new.append("desktop")
                for stream in new:
                    spec = desktop if stream == "desktop" else webcam
                    argv = ffmpeg.publish_argv(url(stream), spec, max_s)
                    publishers[stream] = start(argv, "publish", n, stream)
                # the new user watches every stream but its own; the others watch its new ones
                for stream, pub in publishers.items():
                    if pub.user != n:
                        start(ffmpeg.play_argv(url(stream), max_s), "play", n, stream)
                for m in range(1, n):
                    for stream in new:
                        start(ffmpeg.play_argv(url(stream), max_s), "play", m, stream)
                a, b = t_join + settle, t_join + interval
                self.wait_until(a, served, clients, samples, users)
                before = users.usages(clients)
                socks, cfs = users.socket_bytes(served.port), throttle()
                self.wait_until(b, served, clients, samples, users)
                after = users.usages(clients)
                sent = bytes_between(socks, users.socket_bytes(served.port))
                ctx.point({"users": n}, a, b)
                step = measure_step(
                    n, clients, before, after, sent, publishers, a, b, len(users.cpus)
                )
                step.throttled = throttled_share(cfs, throttle())
                client = client_limit(step.client_busiest)
                server = server_verdict(step, float(p["min_delivery"]), float(p["max_delay_ms"]))
                samples += self.step_samples(step, len(publishers), client, server)
                ctx.log(
                    f"{self.name}: {n} users, {step.streams} streams viewed: delivered"
                    f" {_pct(step.delivery)}, delay {_ms(step.delay_max_ms)} max, client CPU"
                    f" {step.client_busiest:.0%} busiest, server throttled {_pct(step.throttled)}"
                    + (f" ({client or server})" if client or server else "")
                )
                if client:
                    stopped = f"client saturated at {n} users: {client}"
                    break
                if server:
                    stopped = f"server saturated at {n} users: {server}"
                    break
                served_users = n
        finally:
            users.stop()
        labels: dict[str, Any] = {labelkeys.STOPPED: stopped}
        if stopped == STOP_MAX_USERS:
            labels[labelkeys.BOUND] = "lower bound: never saturated"
        elif stopped.startswith("client"):
            labels[labelkeys.INVALID] = "the clients, not the server, were the limit: " + stopped
        samples.append(self.sample("users_served", served_users, **labels))
        return samples

    def wait_until(
        self,
        t: float,
        served: Served,
        clients: list[Any],
        samples: list[Sample],
        users: LocalUsers | RemoteUsers,
    ) -> None:
        """Sleep until monotonic `t`, checking every half second that the server, every
        user and the client host's session still run: a user that drops ends the cell with
        what it said (the steps measured so far are kept)."""
        while (left := t - time.monotonic()) > 0:
            time.sleep(min(0.5, left))
            try:
                users.check()
            except WorkloadError as exc:
                raise WorkloadError(
                    f"{self.name}: {exc}; steps so far are kept", samples=samples
                ) from exc
            code = served.proc.poll()
            if code is not None:
                raise WorkloadError(
                    f"{self.name}: the RTMP server exited (code {code}) mid-run; steps so far"
                    " are kept",
                    samples=samples,
                )
            for c in clients:
                if c.poll() is not None:
                    what = "publisher" if c.kind == "publish" else "viewer"
                    raise WorkloadError(
                        f"{self.name}: user {c.user} dropped: its {what} of stream"
                        f" '{c.stream}' exited with code {c.poll()} ({c.said()}); steps so"
                        " far are kept",
                        samples=samples,
                    )

    def step_samples(
        self, step: Step, publishers: int, client: str | None, server: str | None
    ) -> list[Sample]:
        labels: dict[str, Any] = {labelkeys.USERS: step.users, labelkeys.PUBLISHERS: publishers}
        labels[labelkeys.STREAMS] = step.streams
        if step.throttled is not None:
            labels[labelkeys.CPU_THROTTLED] = round(step.throttled, 3)
            if step.throttled > BUDGET_BOUND:
                labels[labelkeys.BUDGET_BOUND] = (
                    f"throttled in {step.throttled:.0%} of CFS periods > {BUDGET_BOUND:.0%}:"
                    " CPU at its budget"
                )
        if client:
            labels[labelkeys.INVALID] = client
        elif server:
            labels[labelkeys.SATURATED] = server  # a measured point past saturation: kept and drawn
        values = {
            "delivery_ratio": step.delivery,
            "delivered_fps": step.delivered_fps,
            "delay_ms": step.delay_ms,
            "delay_max_ms": step.delay_max_ms,
            "server_in_kbps": step.in_kbps,
            "server_out_kbps": step.out_kbps,
            "streams_viewed": step.streams,
        }
        out = [self.sample(m, v, **labels) for m, v in values.items() if v is not None]
        for metric, value in (
            ("client_cpu_pct", 100 * step.client_busiest),
            ("client_cpu_total_pct", step.client_total_pct),
        ):
            s = self.sample(
                metric, value, **labels, **{labelkeys.CLIENT_LIMIT: f"{CLIENT_SATURATED:.0%}"}
            )
            s.role = "client"
            out.append(s)
        return out


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f} ms"
