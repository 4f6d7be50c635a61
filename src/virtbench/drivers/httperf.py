"""httperf: the open-loop load generator of seeds 000 and 003 — argv, output parser, health.

httperf has no machine-readable output; its summary is a stable block of `Label: k v k v`
lines (format unchanged since 0.9.0), parsed here field by field and tested on real outputs.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field, replace

from ..errors import WorkloadError

ERROR_CLASSES = (
    "client-timo",
    "socket-timo",
    "connrefused",
    "connreset",
    "fd-unavail",
    "addrunavail",
    "ftab-full",
    "other",
)
# errors that mean the CLIENT ran out of a resource, so the step says nothing about the server
CLIENT_RESOURCE_ERRORS = ("fd-unavail", "addrunavail", "ftab-full")
# httperf multiplexes with select(): it can never hold more than FD_SETSIZE sockets
FD_SETSIZE = 1024
# fds of an httperf process that are not connections: stdin/stdout/stderr and a margin for
# whatever else it opens (it lowers its own fd limit to FD_SETSIZE at start)
FD_RESERVE = 24
# a fixed-rate step's automatic client sizing (size_clients): at most this many processes
# side by side (round robin over the client CPUs) ...
MAX_PROCESSES = 16
# ... and at most this many on one client CPU: httperf busy-polls (select() with a zero
# timeout; its man page: "a CPU hog"), so k of them on one CPU each wait about k - 1
# scheduler slices (~1.5 ms each under EEVDF) for it whenever a reply comes in, which adds
# up to ~15-22 ms to reply, connect and connection times at k = 11-16 against ~1 ms replies.
# One: at 4 a fixed-rate storm on this 2-core host ran 8 spinning processes on the CPUs
# the TCG guest served from, which then served 35 of 2,494 req/s (27 Nov 2026, fig14-v2);
# past one per CPU the sockets come from a shorter --timeout instead
MAX_PER_CPU = 1
# ... and past them a shorter --timeout, never below this (a dropped SYN is resent after 1 s;
# the man page: 1 s "may be acceptable", 5-10 s preferable)
MIN_TIMEOUT_S = 1.0
# below this share of the offered connection rate, the client did not really offer it
MIN_SEND_SHARE = 0.90
# connections the client could not even open (no fd / no port), as a share of the step's
# connections, above which the offered load was not applied; a brief server stall on a busy
# host can push a few connections past httperf's 1024-socket cap, which changes the offered
# load by less than this and is labelled (client_errors) rather than invalidating the step
MAX_CLIENT_ERROR_SHARE = 0.01
# httperf issues the connections it is late for in one burst; a burst worth more than this
# share of the step means the offered load was bunched up, not the open-loop rate (the
# captures of healthy steps on this shared host show up to ~0.2 of a short step)
MAX_LAG_SHARE = 0.25
# httperf's own receive buffer (its man page: "By default, the limit is 16KB"); on loopback
# and virtual links (64 KB MSS) a reply larger than its window waits on the busy-polling
# client to read and reopen it: native nginx at 100 KB under a 50 % quota served 6,100-6,700
# req/s at 30 % CPU (transfer 116-129 ms, fd-unavail) with it, 13,700 at its 50 % with 256 KB
RECV_BUFFER_DEFAULT = 16 * 1024
# a reply's status line and headers (nginx sends ~250 bytes), rounded up
REPLY_HEADER_BYTES = 1024


def recv_buffer(reply_kb: float) -> int:
    """--recv-buffer that holds two whole replies of `reply_kb` KB (never below httperf's
    default): the client's window then never throttles the server it measures."""
    return max(RECV_BUFFER_DEFAULT, 2 * (math.ceil(reply_kb * 1024) + REPLY_HEADER_BYTES))


def argv(
    host: str,
    port: int,
    uri: str,
    conn_rate: float,
    num_conns: int,
    calls: int = 1,
    timeout: float = 5.0,
    hog: bool = False,
    server_closes: bool = False,
    recv_bytes: int = RECV_BUFFER_DEFAULT,
) -> list[str]:
    """httperf's argv for one process of one step.

    `server_closes` (one request per connection only) sends `Connection: close`, so the server
    closes first and keeps the TIME_WAIT socket, as with wrk's close mode and an HTTP/1.0
    server; otherwise httperf closes and every connection parks one of the client's
    ephemeral ports in TIME_WAIT for 60 s, which makes each later connect() search longer."""
    cmd = [
        "httperf",
        "--server",
        host,
        "--port",
        str(port),
        "--uri",
        uri,
        "--rate",
        f"{conn_rate:.3f}",
        "--num-conns",
        str(num_conns),
        "--num-calls",
        str(calls),
        "--timeout",
        f"{timeout:g}",
        f"--recv-buffer={recv_bytes}",
    ]
    if hog:
        cmd.insert(1, "--hog")
    if server_closes and calls == 1:
        cmd.append("--add-header=Connection: close\\n")  # httperf turns \n into CRLF
    return cmd


@dataclass(frozen=True)
class Load:
    """One step's offered load split over httperf processes that run side by side."""

    conn_rate: float  # connections per second, all processes together
    shares: list[int]  # connections per process
    rates: list[float]  # connections per second per process


def split_load(conn_rate: float, duration: float, processes: int) -> Load:
    """Every process runs for the same time: its share of the step's connections at its
    share of the rate (no more processes than connections)."""
    total = max(1, round(conn_rate * duration))
    k = min(processes, total)
    shares = [total // k + (1 if i < total % k else 0) for i in range(k)]
    return Load(conn_rate, shares, [conn_rate * n / total for n in shares])


def sockets_per_process(nofile: int) -> int:
    """Connections one httperf process can hold at once under the fd limit `nofile`."""
    return max(1, min(FD_SETSIZE, nofile) - FD_RESERVE)


@dataclass(frozen=True)
class Clients:
    """The httperf processes of a fixed-rate step, their --timeout, how many connections
    they can hold at once, all together, and the client CPUs they share round robin."""

    processes: int
    timeout: float
    sockets: int
    cpus: int = 1

    @property
    def per_cpu(self) -> int:
        """Processes on the busiest client CPU (round robin)."""
        return math.ceil(self.processes / max(1, self.cpus))

    def ran(self, processes: int) -> Clients:
        """These clients as `processes` of them ran (split_load runs no more processes than
        the step has connections): their sockets and per-CPU count with them."""
        per = self.sockets // max(1, self.processes)
        return replace(self, processes=processes, sockets=processes * per)

    def labels(self) -> dict[str, float | int]:
        """Recorded on the step beside `clients` (the processes that ran)."""
        return {
            "client_sockets": self.sockets,
            "timeout_s": self.timeout,
            "clients_per_cpu": self.per_cpu,
        }


def size_clients(
    rate: float,
    timeout: float,
    processes: int,
    nofile: int,
    *,
    calls: int = 1,
    duration: float = math.inf,
    cpus: int = 1,
    limit: int = MAX_PROCESSES,
) -> Clients:
    """At least `processes` httperf processes, and their --timeout, for a FIXED offered rate
    of `rate` req/s over `duration` s, `calls` requests per connection, on `cpus` client
    CPUs: enough to hold every connection the schedule can have outstanding, so a request
    can only fail by the server's fault (client-timo), never for want of a socket
    (fd-unavail) while the server falls behind. That is rate x timeout (a server that
    answers nothing for a whole timeout; in requests, as a connection of several calls may
    wait a timeout for each), but never more than the step opens, rate / calls x duration.
    A rate sweep needs none of it: it stops past saturation, where its sockets run out.

    At most MAX_PER_CPU processes per client CPU (they busy-poll), MAX_PROCESSES and `limit`
    (a client host's SSH sessions) in all; past that the timeout shrinks until they suffice,
    down to MIN_TIMEOUT_S. A rate beyond that keeps those processes and that timeout and
    can still run the client out of sockets, which its verdict flags."""
    per = sockets_per_process(nofile)
    cap = max(1, min(limit, MAX_PROCESSES, MAX_PER_CPU * max(1, cpus)))
    opened = max(1, round(rate / max(1, calls) * duration)) if math.isfinite(duration) else None

    def need(t: float) -> int:
        held = rate * t if opened is None else min(rate * t, opened)
        return math.ceil(held / per)

    if need(timeout) > cap:
        # in tenths of a second, rounded down so that `cap` processes still suffice
        fits = math.floor(cap * per / rate * 10) / 10
        timeout = min(timeout, max(MIN_TIMEOUT_S, fits))  # never longer than asked
    k = min(cap, max(processes, need(timeout), 1))
    return Clients(k, timeout, k * per, max(1, cpus))


@dataclass
class HttperfResult:
    connections: int
    requests: int
    replies: int
    duration_s: float
    conn_rate: float
    conn_time_avg_ms: float
    conn_time_median_ms: float
    conn_time_max_ms: float
    connect_time_ms: float
    concurrent_max: int
    request_rate: float
    reply_rate_avg: float
    reply_rate_min: float
    reply_rate_max: float
    reply_rate_stddev: float
    reply_rate_samples: int
    reply_time_ms: float
    transfer_time_ms: float
    status: dict[str, int]
    cpu_pct: float  # httperf's own view of its CPU share
    net_kb_s: float
    errors: dict[str, int] = field(default_factory=dict)
    max_burst: int = 0
    timeout_s: float | None = None  # its --timeout, from the command line it echoes

    @property
    def errors_total(self) -> int:
        return sum(self.errors.values())

    @property
    def throughput(self) -> float:
        """Replies per second over the whole step: the server throughput of the papers."""
        return self.replies / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def starved(self) -> int:
        """Connections httperf could not even open: it had no fd or port for them."""
        return sum(self.errors.get(c, 0) for c in CLIENT_RESOURCE_ERRORS)

    @property
    def attempts(self) -> int:
        """Connections httperf tried to open: opened ones plus those it had no fd/port for."""
        return self.connections + self.starved

    def send_rate(self) -> float:
        """Connections issued per second, estimated from above: the last connection was issued
        at the latest `max connection time` before the test ended. A slow server (long
        connections, SYN retries) therefore never makes the client look slow; only a client
        that really fell behind its schedule shows a low send rate.

        httperf's connection times count only connections that completed a call: one that
        timed out (client-timo) is in none of them, yet it holds the test open for its
        `--timeout`, so then the last connection may have been issued that long before
        the end."""
        tail = self.conn_time_max_ms / 1000.0
        if self.errors.get("client-timo") and self.timeout_s:
            tail = max(tail, self.timeout_s)
        span = max(self.duration_s - tail, 1e-3)
        return self.attempts / span


def _num(text: str, pattern: str, what: str) -> list[float]:
    m = re.search(pattern, text, re.MULTILINE)
    if not m:
        raise WorkloadError(f"httperf output has no {what} line; is it httperf 0.9?")
    return [float(g) for g in m.groups()]


_F = r"([-\d.]+)"


def parse(text: str) -> HttperfResult:
    conns, reqs, reps, dur = _num(
        text,
        rf"^Total: connections {_F} requests {_F} replies {_F} test-duration {_F} s",
        "'Total:'",
    )
    (crate, conc) = _num(text, rf"^Connection rate: {_F} conn/s .*<={_F} concurrent", "rate")
    ct_min, ct_avg, ct_max, ct_med, _ct_sd = _num(
        text,
        rf"^Connection time \[ms\]: min {_F} avg {_F} max {_F} median {_F} stddev {_F}",
        "connection time",
    )
    (connect,) = _num(text, rf"^Connection time \[ms\]: connect {_F}", "connect time")
    (rrate,) = _num(text, rf"^Request rate: {_F} req/s", "request rate")
    rmin, ravg, rmax, rsd, rn = _num(
        text,
        rf"^Reply rate \[replies/s\]: min {_F} avg {_F} max {_F} stddev {_F} \({_F} samples\)",
        "reply rate",
    )
    resp, xfer = _num(text, rf"^Reply time \[ms\]: response {_F} transfer {_F}", "reply time")
    st = _num(
        text,
        rf"^Reply status: 1xx={_F} 2xx={_F} 3xx={_F} 4xx={_F} 5xx={_F}",
        "reply status",
    )
    (cpu,) = _num(text, rf"^CPU time \[s\]: .*total {_F}%\)", "CPU time")
    (net,) = _num(text, rf"^Net I/O: {_F} KB/s", "Net I/O")
    e1 = _num(
        text,
        rf"^Errors: total {_F} client-timo {_F} socket-timo {_F} connrefused {_F}"
        rf" connreset {_F}",
        "errors",
    )
    e2 = _num(
        text,
        rf"^Errors: fd-unavail {_F} addrunavail {_F} ftab-full {_F} other {_F}",
        "errors",
    )
    burst = re.search(r"^Maximum connect burst length: (\d+)", text, re.MULTILINE)
    timeout = re.search(r"^httperf .*--timeout=([\d.]+)", text, re.MULTILINE)
    del ct_min
    return HttperfResult(
        connections=int(conns),
        requests=int(reqs),
        replies=int(reps),
        duration_s=dur,
        conn_rate=crate,
        conn_time_avg_ms=ct_avg,
        conn_time_median_ms=ct_med,
        conn_time_max_ms=ct_max,
        connect_time_ms=connect,
        concurrent_max=int(conc),
        request_rate=rrate,
        reply_rate_avg=ravg,
        reply_rate_min=rmin,
        reply_rate_max=rmax,
        reply_rate_stddev=rsd,
        reply_rate_samples=int(rn),
        reply_time_ms=resp,
        transfer_time_ms=xfer,
        status={f"{i}xx": int(v) for i, v in enumerate(st, start=1)},
        cpu_pct=cpu,
        net_kb_s=net,
        errors=dict(zip(ERROR_CLASSES, (int(v) for v in e1[1:] + e2), strict=True)),
        max_burst=int(burst.group(1)) if burst else 0,
        timeout_s=float(timeout.group(1)) if timeout else None,
    )


def invalid_reason(r: HttperfResult, conn_rate: float, client_util: float = 0.0) -> str | None:
    """Why this step measured the client rather than the server, or None if it is sound:
    the open-loop form of the one rule of validity.py.

    httperf's own CPU time is NOT a saturation signal: it busy-polls (select() with a zero
    timeout, ~35,000 calls/s at 50 conn/s here) and its man page expects ~100% CPU ("httperf
    is a CPU hog"). A client that cannot keep up shows instead as (1) connections it had no
    socket or port for, (2) a sustained send rate below the offered rate, (3) a schedule
    that slipped by more than MAX_LAG_SHARE of the step (connections issued in one burst to
    catch up). `client_util` is accepted for the record but does not decide."""
    del client_util
    reasons = []
    if r.starved > MAX_CLIENT_ERROR_SHARE * max(r.attempts, 1):
        what = ", ".join(f"{c}={r.errors[c]}" for c in CLIENT_RESOURCE_ERRORS if r.errors.get(c))
        reasons.append(
            f"load generator ran out of sockets ({what}; httperf holds at most"
            f" {FD_SETSIZE} connections; {r.starved / max(r.attempts, 1):.1%} of"
            " connections could not be opened)"
        )
    sent = r.send_rate()
    if conn_rate > 0 and sent < MIN_SEND_SHARE * conn_rate:
        reasons.append(
            f"load generator could not send at the offered rate ({sent:.0f} of"
            f" {conn_rate:.0f} conn/s)"
        )
    lag = r.max_burst / conn_rate if conn_rate > 0 else 0.0
    if r.duration_s > 0 and lag > MAX_LAG_SHARE * r.duration_s:
        reasons.append(
            f"load generator fell behind its schedule by up to {lag:.2f} s of a"
            f" {r.duration_s:.1f} s step (a burst of {r.max_burst} connections)"
        )
    return "; ".join(reasons) or None


def _weighted(values: list[float], weights: list[float]) -> float:
    total = sum(weights)
    if total <= 0:
        return statistics.fmean(values) if values else 0.0
    return sum(v * w for v, w in zip(values, weights, strict=True)) / total


def combine(results: list[HttperfResult]) -> HttperfResult:
    """One step's result from several httperf processes that ran side by side (each at its
    share of the offered rate): counts and rates add up, times are averages weighted by what
    they average over, maxima stay maxima.

    The combined `duration_s` is chosen so that `throughput` is the SUM of the processes'
    throughputs (each over its own test duration). httperf's per-5 s reply-rate samples
    cannot be combined (they are not aligned across processes), so they are dropped."""
    if len(results) == 1:
        return results[0]
    if not results:
        raise WorkloadError("no httperf result to combine")
    replies = sum(r.replies for r in results)
    throughput = sum(r.throughput for r in results)
    conns = [float(r.connections) for r in results]
    reps = [float(r.replies) for r in results]
    errors = {c: sum(r.errors.get(c, 0) for r in results) for c in ERROR_CLASSES}
    return HttperfResult(
        connections=sum(r.connections for r in results),
        requests=sum(r.requests for r in results),
        replies=replies,
        duration_s=replies / throughput if throughput > 0 else max(r.duration_s for r in results),
        conn_rate=sum(r.conn_rate for r in results),
        conn_time_avg_ms=_weighted([r.conn_time_avg_ms for r in results], conns),
        # a median of medians is not the median: keep the worst process's, conservatively
        conn_time_median_ms=max(r.conn_time_median_ms for r in results),
        conn_time_max_ms=max(r.conn_time_max_ms for r in results),
        connect_time_ms=_weighted([r.connect_time_ms for r in results], conns),
        concurrent_max=sum(r.concurrent_max for r in results),
        request_rate=sum(r.request_rate for r in results),
        reply_rate_avg=sum(r.reply_rate_avg for r in results),
        reply_rate_min=0.0,
        reply_rate_max=0.0,
        reply_rate_stddev=0.0,
        reply_rate_samples=0,
        reply_time_ms=_weighted([r.reply_time_ms for r in results], reps),
        transfer_time_ms=_weighted([r.transfer_time_ms for r in results], reps),
        status={k: sum(r.status.get(k, 0) for r in results) for k in results[0].status},
        cpu_pct=max(r.cpu_pct for r in results),
        net_kb_s=sum(r.net_kb_s for r in results),
        errors=errors,
        max_burst=max(r.max_burst for r in results),
        timeout_s=max((r.timeout_s for r in results if r.timeout_s), default=None),
    )
