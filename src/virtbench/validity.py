"""One validity rule for every client-server tool (wrk, httperf, iperf3, sockperf, JMeter): a figure
measured while the load generator was the limit is invalid (docs/ARCHITECTURE.md, Validity).

It is then a property of the client, not of the platform: a platform's overhead hides
behind it (the ratio drifts to 1) and `compare` would call "same" what it cannot see. The
sample is kept and shown with its reason, never used in statistics.

How a tool shows the fault depends on its loop:
- closed loop (wrk, iperf3, sockperf, JMeter): the client process used more than CLIENT_SATURATED
  of the CPUs it could use (its own user + system time over the run, from wait4);
- open loop (httperf): it busy-polls, so its CPU says nothing; a client that was the limit
  could not deliver the offered load (drivers.httperf.invalid_reason).
"""

from __future__ import annotations

# A load generator above this share of its usable CPUs is the bottleneck, not the server.
CLIENT_SATURATED = 0.90
# More error replies than this share and the throughput counts errors, not the page served.
HTTP_ERROR_SHARE = 0.01


def client_limit(cpu_util: float) -> str | None:
    """The reason a closed-loop client's figure is invalid, None if its CPU had room."""
    if cpu_util > CLIENT_SATURATED:
        return f"load generator CPU saturated ({cpu_util:.0%} of its CPUs)"
    return None


def http_errors(errors: int, replies: int) -> str | None:
    """The reason a web figure is invalid when its replies were HTTP errors (status not
    2xx/3xx: a missing file, an overloaded proxy's 502): counted as requests served, they
    would make a broken server look fast."""
    if replies > 0 and errors > HTTP_ERROR_SHARE * replies:
        return f"{errors} of {replies} replies were HTTP errors (status not 2xx/3xx)"
    return None


def first(*reasons: str | None) -> str | None:
    return next((r for r in reasons if r), None)
