"""sockperf: request/response round trips (netperf's TCP_RR/UDP_RR; netperf is not in
Debian), read from its ping-pong --full-rtt summary."""

from __future__ import annotations

import re

from ..errors import WorkloadError
from ..validity import client_limit, first

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FLOAT = r"([-\d.]+)"


def server_argv(port: int, tcp: bool, bind: str | None = None) -> list[str]:
    """`bind`: the only address to listen on (None: every address)."""
    # --uc-reuseaddr: bind despite TIME_WAIT sockets other clients left on the port
    proto = ["--tcp"] if tcp else []
    addr = bind or "0.0.0.0"
    return ["sockperf", "server", *proto, "--uc-reuseaddr", "-i", addr, "-p", str(port)]


def client_argv(host: str, port: int, tcp: bool, duration: float, msg_size: int) -> list[str]:
    proto = ["--tcp"] if tcp else []
    argv = ["sockperf", "ping-pong", *proto, "-i", host, "-p", str(port)]
    argv += ["-t", f"{max(1, round(duration))}", "--mps=max", "--full-rtt"]
    return argv + ["-m", str(msg_size)]


def invalid_reason(res: dict[str, float], client_util: float) -> str | None:
    """The rule of virtbench/validity.py (closed loop: the client's CPU; ping-pong waits for
    each reply, so a saturated client adds its own delay to every round trip), or no reply."""
    replied = None if res["received"] > 0 else "no reply received"
    return first(client_limit(client_util), replied)


def parse(text: str) -> dict[str, float]:
    """sockperf ping-pong --full-rtt summary: RTT mean/stddev and percentiles in usec."""
    text = _ANSI.sub("", text)
    if "ERROR" in text and "Summary" not in text:
        line = next(ln for ln in text.splitlines() if "ERROR" in ln)
        raise WorkloadError(f"sockperf: {line.split('ERROR:', 1)[-1].strip()}")
    valid = re.search(
        rf"\[Valid Duration\] RunTime={_FLOAT} sec; SentMessages=(\d+); ReceivedMessages=(\d+)",
        text,
    )
    avg = re.search(rf"avg-rtt={_FLOAT} \(std-dev={_FLOAT}\)", text)
    if "No valid observations" in text:
        # sockperf drops the warm-up and edges of the run; a short run on a busy host is empty
        raise WorkloadError(
            "sockperf: no valid observations (the host was too busy for the run length);"
            " raise suites.network.duration"
        )
    if not valid or not avg:
        tail = " | ".join(text.strip().splitlines()[-2:])
        raise WorkloadError(f"sockperf output has no round-trip summary: {tail}")
    out = {
        "runtime_s": float(valid.group(1)),
        "received": float(valid.group(3)),
        "mean": float(avg.group(1)),
        "stddev": float(avg.group(2)),
    }
    for m in re.finditer(rf"---> percentile {_FLOAT} =\s*{_FLOAT}", text):
        out[f"p{float(m.group(1)):g}"] = float(m.group(2))
    for m in re.finditer(rf"---> <(MAX|MIN)> observation =\s*{_FLOAT}", text):
        out[m.group(1).lower()] = float(m.group(2))
    dropped = re.search(r"# dropped messages = (\d+)", text)
    out["dropped"] = float(dropped.group(1)) if dropped else 0.0
    return out
