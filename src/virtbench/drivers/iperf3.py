"""iperf3: bulk TCP/UDP throughput, read from its JSON output (-J)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import WorkloadError
from ..validity import CLIENT_SATURATED, client_limit, first

# one client connect attempt (a fresh SYN each; the kernel's own retries back off to 31 s)
CONNECT_ATTEMPT_S = 3.0
# the client's words when nothing reached the server (so nothing was disturbed: retry)
UNABLE_TO_CONNECT = "unable to connect to server"


def server_argv(port: int, bind: str | None = None) -> list[str]:
    """`bind`: the only address to listen on (None: every address)."""
    return ["iperf3", "-s", "-p", str(port), *(["-B", bind] if bind else [])]


def client_argv(
    host: str,
    port: int,
    duration: float,
    streams: int,
    reverse: bool = False,
    udp_mbps: float | None = None,
) -> list[str]:
    """`udp_mbps` None is TCP; for UDP 0 means unlimited."""
    # iperf3 3.12 reads -t as an integer; a short --connect-timeout, retried by the caller,
    # so each attempt sends a fresh SYN instead of waiting out the kernel's SYN back-off
    argv = ["iperf3", "-c", host, "-p", str(port), "-J", "-t", str(max(1, round(duration)))]
    argv += ["--connect-timeout", str(int(CONNECT_ATTEMPT_S * 1000))]
    argv += ["-P", str(streams)]
    if reverse:
        argv.append("-R")
    if udp_mbps is not None:
        argv += ["-u", "-b", f"{udp_mbps:g}M" if udp_mbps else "0"]
    return argv


def invalid_reason(res: dict[str, Any], client_util: float) -> str | None:
    """The rule of virtbench/validity.py (closed loop: the client's CPU), or nothing received.
    The client's share is measured by virtbench (wait4), not iperf3's own host_total, so it
    is judged like every other tool's."""
    nothing = None if res["received_bps"] > 0 else "nothing received"
    return first(client_limit(client_util), nothing)


def parse(text: str) -> dict[str, Any]:
    """iperf3 -J: the receiver-side sums, loss/jitter for UDP, retransmits for TCP."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise WorkloadError(f"iperf3 output is not JSON: {exc}") from exc
    if doc.get("error"):
        raise WorkloadError(f"iperf3: {doc['error']}")
    end = doc.get("end") or {}
    recv = end.get("sum_received") or end.get("sum")
    sent = end.get("sum_sent") or end.get("sum")
    if not recv or not sent:
        raise WorkloadError("iperf3 JSON has no end.sum_received/sum_sent")
    cpu = end.get("cpu_utilization_percent", {})
    return {
        "received_bps": float(recv["bits_per_second"]),
        "sent_bps": float(sent["bits_per_second"]),
        "retransmits": sent.get("retransmits"),
        "jitter_ms": recv.get("jitter_ms"),
        "lost_percent": recv.get("lost_percent"),
        "client_cpu_pct": cpu.get("host_total"),
        "server_cpu_pct": cpu.get("remote_total"),
    }


def cpu_limit(client_util: float, server_cpu_pct: float | None) -> str:
    """Which end's CPU bounded the transfer: `client`, `server`, or `none` (the path or the
    network itself). On one host both ends are CPU-bound; the sender costs more per byte, so
    a campaign that must be server-limited runs with `reverse = true` (the server sends)."""
    if client_util > CLIENT_SATURATED:
        return "client"
    if server_cpu_pct is not None and server_cpu_pct / 100 > CLIENT_SATURATED:
        return "server"
    return "none"
