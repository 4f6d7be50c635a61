"""Apache JMeter 2.13 (Debian's `jmeter`, `jmeter-http`) in non-GUI mode as the application
suite's load generator: its argv, its CSV results file (.jtl) and the interval arithmetic of
seed 004 (a dry run, then a measured period cut into fixed intervals).

JMeter runs as `java -jar vb-jmeter.jar` (appstack/VbJMeter.java: Debian's JMeter 2.13 cannot
load any plan with Debian 12's XStream without it) inside `sh`, which sends the .jtl to
stdout after JMeter's own output went to stderr: the results come back the same way from a
client on this host and from a client host (serving/remote.py moves files named in argv
there, and only stdout back).
"""

from __future__ import annotations

import bisect
import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import safefs
from ..errors import WorkloadError
from ..validity import client_limit, first

JMETER_HOME = "/usr/share/jmeter"
JTL_HEADER = "timeStamp"  # first column of the .jtl's header line
PERCENTILES = (50, 90, 99)
ERROR_MARKER = "Error in NonGUIDriver"  # JMeter 2.13 prints it and still exits 0

# The .jtl JMeter writes: CSV with a header, a start timestamp in epoch ms per sample, and
# only the fields read here (a 180 s + 180 s run writes a line per request).
SAVE_PROPS = {
    "jmeter.save.saveservice.output_format": "csv",
    "jmeter.save.saveservice.print_field_names": "true",
    "jmeter.save.saveservice.timestamp_format": "ms",
    "jmeter.save.saveservice.default_delimiter": ",",
    "jmeter.save.saveservice.label": "true",
    "jmeter.save.saveservice.response_code": "true",
    "jmeter.save.saveservice.response_message": "false",
    "jmeter.save.saveservice.successful": "true",
    "jmeter.save.saveservice.thread_name": "false",
    "jmeter.save.saveservice.data_type": "false",
    "jmeter.save.saveservice.bytes": "true",
    "jmeter.save.saveservice.thread_counts": "false",
    "jmeter.save.saveservice.latency": "true",
    "jmeter.save.saveservice.connect_time": "true",
    "jmeter.save.saveservice.assertion_results_failure_message": "false",
    "sampleresult.timestamp.start": "true",  # timeStamp = when the request started
    "summariser.interval": "6",  # JMeter's own progress lines (stderr), for the log only
}

# sh: run JMeter (its own output to stderr), then print the .jtl; exit with JMeter's status.
# Its directory goes with it. It is made in $1 (root's 0700 PRIVATE_TMP; /tmp where that is
# missing, on a client host) and named by its owner as ownedtmp names (vb-jmeter-PID-START-):
# a SIGKILL leaves it, and `cleanup` removes it once that shell is gone.
WRAPPER = (
    'set -u; base="$1"; shift; [ -d "$base" ] || base=/tmp; '
    "start=$(cut -d' ' -f22 /proc/$$/stat); "
    'out=$(mktemp -d "$base/vb-jmeter-$$-$start-XXXXXXXX"); java="$1"; shift; '
    "trap 'rm -rf \"$out\"' EXIT; trap 'exit 143' TERM INT HUP; "
    '"$java" "$@" -l "$out/results.jtl" -j "$out/jmeter.log" >&2; rc=$?; '
    'cat "$out/results.jtl" 2>/dev/null; '
    'if [ "$rc" -ne 0 ] || [ ! -s "$out/results.jtl" ]; then tail -n 20 "$out/jmeter.log" >&2; fi; '
    'rm -rf "$out"; exit "$rc"'
)


def argv(
    launcher_jar: str,
    plan: str,
    host: str,
    port: int,
    users: int,
    duration_s: int,
    jvm_flags: list[str],
    timeout_ms: int = 10_000,
) -> list[str]:
    """The client's argv: sh running JMeter non-GUI on `plan` for `duration_s` seconds with
    `users` threads (no think time) against host:port; the .jtl on stdout."""
    props = {
        "vb.host": host.strip("[]"),
        "vb.port": str(port),
        "vb.users": str(users),
        "vb.duration": str(duration_s),
        "vb.timeout_ms": str(timeout_ms),
        **SAVE_PROPS,
    }
    java = [*jvm_flags, f"-Djmeter.home={JMETER_HOME}", "-jar", launcher_jar]
    jmeter = ["-n", "-t", plan, *(f"-J{k}={v}" for k, v in props.items())]
    return ["sh", "-c", WRAPPER, "sh", str(safefs.private_tmp()), "java", *java, *jmeter]


@dataclass(frozen=True)
class Row:
    """One sample (request) of the .jtl."""

    start_ms: int  # epoch ms when the request started (client clock)
    elapsed_ms: int  # response time: request sent to last byte received
    success: bool
    code: str  # HTTP status, or JMeter's exception name for a failed connection
    latency_ms: int = 0  # to the first byte
    connect_ms: int = 0
    nbytes: int = 0

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.elapsed_ms


def parse(text: str) -> list[Row]:
    """The .jtl CSV (header line first); anything before the header is ignored."""
    start = text.find(JTL_HEADER + ",")
    if start < 0:
        raise WorkloadError("jmeter: no results (.jtl header missing from its output)")
    reader = csv.DictReader(io.StringIO(text[start:]))
    rows: list[Row] = []
    try:
        for d in reader:
            if not d.get("timeStamp"):
                continue
            rows.append(
                Row(
                    start_ms=int(d["timeStamp"]),
                    elapsed_ms=int(d["elapsed"]),
                    success=d["success"].strip().lower() == "true",
                    code=d.get("responseCode") or "",
                    latency_ms=int(d.get("Latency") or 0),
                    connect_ms=int(d.get("Connect") or 0),
                    nbytes=int(d.get("bytes") or 0),
                )
            )
    except (KeyError, ValueError, TypeError) as exc:
        raise WorkloadError(f"jmeter: unreadable .jtl line {reader.line_num}: {exc}") from exc
    return rows


def percentile(sorted_values: list[int], p: float) -> float:
    """Nearest-rank percentile (JMeter's own aggregate report uses a rank too): the smallest
    value with at least p % of the values at or below it."""
    if not sorted_values:
        return math.nan
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return float(sorted_values[k - 1])


@dataclass
class Stats:
    """Requests that completed within [t0, t1) seconds of the run's start."""

    t0: float
    t1: float
    completed: int = 0
    errors: int = 0
    elapsed_ms: list[int] = field(default_factory=list)  # successful requests', sorted
    codes: dict[str, int] = field(default_factory=dict)  # error code -> count

    @property
    def seconds(self) -> float:
        return self.t1 - self.t0

    @property
    def throughput(self) -> float:
        """Successful requests per second."""
        return (self.completed - self.errors) / self.seconds if self.seconds > 0 else 0.0

    @property
    def error_pct(self) -> float:
        return 100 * self.errors / self.completed if self.completed else 0.0

    def pct(self, p: float) -> float:
        return percentile(self.elapsed_ms, p)

    @property
    def mean_ms(self) -> float:
        return sum(self.elapsed_ms) / len(self.elapsed_ms) if self.elapsed_ms else math.nan


@dataclass
class Periods:
    dry: Stats
    measured: Stats
    intervals: list[Stats]
    late: int  # requests completed after the measured period (JMeter stopping): not counted


def _collect(rows: Iterable[Row], t0_ms: int, bounds: list[float]) -> list[Stats]:
    """Stats per [bounds[i], bounds[i+1]) seconds after t0; a request belongs to the interval
    it completed in (throughput counts completions, as JMeter's own reports do)."""
    out = [Stats(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    for r in rows:
        t = (r.end_ms - t0_ms) / 1000
        if t < bounds[0] or t >= bounds[-1]:
            continue
        s = out[bisect.bisect_right(bounds, t) - 1]
        s.completed += 1
        if r.success:
            s.elapsed_ms.append(r.elapsed_ms)
        else:
            s.errors += 1
            s.codes[r.code or "?"] = s.codes.get(r.code or "?", 0) + 1
    for s in out:
        s.elapsed_ms.sort()
    return out


def interval_bounds(dry_s: float, measured_s: float, interval_s: float) -> list[float]:
    """Seconds since the start: 0, the end of the dry run, then every interval_s to the end of
    the measured period (a last partial interval is dropped: every interval is equally long)."""
    n = int(measured_s // interval_s + 1e-9)
    if n < 1:
        raise WorkloadError(f"measured period {measured_s} s is shorter than one interval")
    return [0.0, dry_s, *(dry_s + (k + 1) * interval_s for k in range(n))]


def periods(rows: list[Row], dry_s: float, measured_s: float, interval_s: float) -> Periods:
    """The dry run, the measured period and its intervals. Time 0 is the first request's start
    (JMeter starts every user at once: no ramp-up)."""
    if not rows:
        raise WorkloadError("jmeter: the .jtl holds no request")
    t0 = min(r.start_ms for r in rows)
    bounds = interval_bounds(dry_s, measured_s, interval_s)
    dry, *intervals = _collect(rows, t0, bounds)
    (measured,) = _collect(rows, t0, [bounds[1], bounds[-1]])
    late = sum(1 for r in rows if (r.end_ms - t0) / 1000 >= bounds[-1])
    return Periods(dry, measured, intervals, late)


def invalid_reason(measured: Stats, client_util: float, max_error_pct: float) -> str | None:
    """The rule of virtbench/validity.py (closed loop: the client's CPU), no request completed, or
    more failed requests than `max_error_pct` % (the figure is then not the application's
    throughput but its failure rate)."""
    done = None if measured.completed > measured.errors else _none_succeeded(measured)
    errs = (
        f"{measured.errors} of {measured.completed} requests failed ({measured.error_pct:.1f} %"
        f" > {max_error_pct:g} %; codes {measured.codes})"
        if measured.error_pct > max_error_pct
        else None
    )
    return first(client_limit(client_util), done, errs)


def _none_succeeded(measured: Stats) -> str:
    """Why a measured period has no successful request, with JMeter's error codes (e.g.
    `Non HTTP response code: java.net.ConnectException`: the target does not answer)."""
    if not measured.completed:
        return "no request completed in the measured period"
    return f"no request succeeded ({measured.errors} failed; codes {measured.codes})"


def check_run(rc: int, stdout: str, stderr: str) -> None:
    """Raise with JMeter's own words if it did not run the plan (2.13 exits 0 on some)."""
    if ERROR_MARKER in stderr or ERROR_MARKER in stdout or rc != 0 or JTL_HEADER not in stdout:
        raise WorkloadError(f"jmeter failed (exit {rc}): {_jmeter_words(stderr or stdout)}")


def _jmeter_words(text: str) -> str:
    """JMeter's own error line (`Error in NonGUIDriver ...`: a plan it cannot load) before its
    last lines that are not stack frames (its log's tail follows a failed run)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    said = [ln[:300] for ln in lines if ERROR_MARKER in ln][:1]
    rest = [ln for ln in lines if not ln.startswith(("at ", "... ")) and ln[:300] not in said]
    return " | ".join(said + rest[-3:])
