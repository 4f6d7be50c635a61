"""wrk: closed-loop maximum throughput and latency percentiles, read from a Lua `done()` hook
that prints one JSON line (wrk has no JSON output of its own)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .. import ownedtmp, safefs
from ..errors import WorkloadError
from ..validity import client_limit, first, http_errors

MARKER = "VIRTBENCH-JSON "
PERCENTILES = (50, 75, 90, 99, 99.9, 99.99)

# VB_CALLS_PER_CONN: 0 keeps connections alive, 1 closes after every request (like httperf
# --num-calls=1), N closes every Nth request of a thread (about N requests per connection).
LUA = r"""
local calls = tonumber(os.getenv("VB_CALLS_PER_CONN") or "0") or 0
if calls == 1 then
  wrk.headers["Connection"] = "close"
elseif calls > 1 then
  local n = 0
  request = function()
    n = n + 1
    if n % calls == 0 then
      return wrk.format(nil, nil, {["Connection"] = "close"})
    end
    return wrk.format(nil, nil)
  end
end
done = function(summary, latency, requests)
  local e = summary.errors
  local p = {}
  for _, q in ipairs({%PCTS%}) do
    p[#p + 1] = string.format('"%s":%d', tostring(q), latency:percentile(q))
  end
  io.write(string.format(
    '%MARKER%{"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%f,"stdev":%f,"percentiles":{%s}}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev, table.concat(p, ",")))
end
""".replace("%PCTS%", ", ".join(str(p) for p in PERCENTILES)).replace("%MARKER%", MARKER)


@contextmanager
def script() -> Iterator[str]:
    """The Lua script as a short-lived host file (removed on exit; owner-named: ownedtmp)."""
    fd, path = ownedtmp.mkstemp("wrk", suffix=".lua", dir=safefs.private_tmp())
    try:
        with os.fdopen(fd, "w") as f:
            f.write(LUA)
        yield path
    finally:
        with suppress(OSError):
            Path(path).unlink()


def argv(url: str, script_path: str, threads: int, connections: int, duration: float) -> list[str]:
    return [
        "wrk",
        "-t",
        str(threads),
        "-c",
        str(max(connections, threads)),
        "-d",
        f"{max(1, round(duration))}s",
        "--timeout",
        "5s",
        "-s",
        script_path,
        url,
    ]


@dataclass
class WrkResult:
    duration_s: float
    requests: int
    bytes: int
    errors: dict[str, int]
    latency_us: dict[str, float]  # min, max, mean, stdev
    percentiles_us: dict[str, float]  # "50", "99.9", ...

    @property
    def req_per_s(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def kb_per_s(self) -> float:
        return self.bytes / 1024 / self.duration_s if self.duration_s > 0 else 0.0


def invalid_reason(r: WrkResult, client_util: float) -> str | None:
    """The rule of virtbench/validity.py (closed loop: the client's CPU), no request done, or
    replies that were HTTP errors (wrk counts them as requests; `status` is status > 399)."""
    done = None if r.requests else f"no request completed (errors {r.errors})"
    return first(
        client_limit(client_util), done, http_errors(r.errors.get("status", 0), r.requests)
    )


def parse(stdout: str) -> WrkResult:
    line = next((ln for ln in stdout.splitlines() if ln.startswith(MARKER)), None)
    if line is None:
        raise WorkloadError("wrk printed no result line (its Lua done() hook did not run)")
    try:
        d = json.loads(line[len(MARKER) :])
        lat = d["latency_us"]
        return WrkResult(
            duration_s=d["duration_us"] / 1e6,
            requests=int(d["requests"]),
            bytes=int(d["bytes"]),
            errors={k: int(v) for k, v in d["errors"].items()},
            latency_us={k: float(lat[k]) for k in ("min", "max", "mean", "stdev")},
            percentiles_us={k: float(v) for k, v in lat["percentiles"].items()},
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise WorkloadError(f"wrk result line is not the expected JSON: {exc}") from exc
