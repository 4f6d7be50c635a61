"""virtbench's own probes (vb-tick, vb-switch; probes/*.c): their JSON result, exit codes, and
the histogram analysis that finds the timer tick's second mode (seed 001 Fig. 6)."""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from typing import Any

from .. import labelkeys
from ..errors import WorkloadError

# exit codes of the probes (probes/vb_probe.h)
EXIT_USAGE = 2
EXIT_NOPERM = 3


def probe_options(policy: str, clock: str, priority: int, allow_unprivileged: bool) -> list[str]:
    """The options every probe takes; a negative `priority` leaves the probe to take the
    policy's highest."""
    argv = ["--policy", policy, "--clock", clock]
    if priority >= 0:
        argv += ["--priority", str(priority)]
    return argv + (["--allow-unprivileged"] if allow_unprivileged else [])


def load_json(text: str, what: str) -> dict[str, Any]:
    """The one JSON object a probe prints (the last line that parses)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise WorkloadError(f"{what}: no JSON result in its output: {text.strip()[-200:]!r}")


@dataclass
class Modes:
    """The main mode of a duration histogram and the delays above it."""

    main_us: float  # the most frequent duration (undisturbed iterations)
    threshold_us: float  # durations above this count as disturbed
    disturbed: int  # iterations longer than threshold
    second_us: float | None  # the most frequent disturbed duration (tick handling), if any
    total: int

    @property
    def delay_us(self) -> float | None:
        return None if self.second_us is None else self.second_us - self.main_us


def modes(bins: list[list[float]], min_gap_us: float = 2.0, window_us: float = 100.0) -> Modes:
    """Find the main mode and the second mode of a histogram of [lo_ns, hi_ns, count] bins.

    Bins are regrouped into 1 µs buckets. The threshold is the main mode plus the larger of
    `min_gap_us` and 3x the main peak's half-width (so normal jitter is not "disturbed").
    The second mode is the fullest 1 µs bucket above the threshold within `window_us`.
    """
    buckets: dict[int, int] = {}
    total = 0
    for lo, hi, count in bins:
        total += int(count)
        if hi - lo <= 1000.0:  # only the fine (linear) bins carry the mode structure
            key = int((lo + hi) / 2 // 1000)
            buckets[key] = buckets.get(key, 0) + int(count)
    if not buckets:
        return Modes(0.0, 0.0, 0, None, total)
    main = max(buckets, key=lambda k: buckets[k])
    peak = buckets[main]
    half = [k for k, c in buckets.items() if c >= peak / 2]
    width = max(half) - min(half) + 1
    threshold = main + 0.5 + max(min_gap_us, 3.0 * width / 2)
    disturbed = sum(int(c) for lo, hi, c in bins if (lo + hi) / 2 / 1000.0 > threshold)
    above = {k: c for k, c in buckets.items() if threshold < k + 0.5 <= main + window_us}
    second = max(above, key=lambda k: above[k]) + 0.5 if above else None
    return Modes(main + 0.5, threshold, disturbed, second, total)


@dataclass
class ProbeResult:
    """The facts every probe run shares: clock, scheduling, warnings, statistics in µs."""

    data: dict[str, Any]
    stats_us: dict[str, float] = field(default_factory=dict)
    labels: dict[str, Any] = field(default_factory=dict)


def parse_probe(stdout: str, what: str) -> ProbeResult:
    data = load_json(stdout, what)
    try:
        stats = {k: float(v) / 1000.0 for k, v in data["stats_ns"].items()}
        clock, sched = data["clock"], data["sched"]
    except (KeyError, TypeError, ValueError) as exc:
        raise WorkloadError(f"{what}: unexpected JSON (missing {exc})") from exc
    labels: dict[str, Any] = {
        labelkeys.CLOCK: clock["source"],
        labelkeys.TSC_INVARIANT: bool(clock["cpuid_invariant"] or clock["cpuinfo_invariant"]),
        labelkeys.POLICY: sched["policy"],
        labelkeys.PRIORITY: sched["priority"],
        labelkeys.REALTIME: bool(sched["rt"]),
        labelkeys.SAMPLES: int(data.get("samples", 0)),
    }
    if clock.get("fallback"):
        labels[labelkeys.CLOCK_FALLBACK] = clock["fallback"]
    warnings = list(data.get("warnings") or [])
    if not sched["rt"] and not any("not real-time" in w for w in warnings):
        warnings.append("ran without a real-time policy")
    if warnings:
        labels[labelkeys.WARNING] = "; ".join(warnings)
    if labels[labelkeys.SAMPLES] == 0:
        labels[labelkeys.INVALID] = "the probe recorded no samples"
    return ProbeResult(data, stats, labels)


def probe_failure(what: str, returncode: int, stderr: str) -> WorkloadError:
    """A clear message for a probe that refused to run."""
    msg = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {returncode}"
    if returncode == EXIT_NOPERM:
        return WorkloadError(
            f"{what}: {msg}. To measure without real-time priority anyway, set "
            "allow_unprivileged = true in [suites.latency] (results get a warning label)"
        )
    return WorkloadError(f"{what}: {msg}")


# --- RT throttling: tell its windows from other delays, and the statistics without them ------


@dataclass(frozen=True)
class ThrottleBudget:
    """A real-time budget that can throttle the probe: `runtime_us` of every `period_us`.

    A busy real-time task in it is stopped for up to (period - runtime) once per period, and
    the stop always ends at a period boundary (the kernel's period timer refills the budget)."""

    source: str  # "kernel.sched_rt_runtime_us", "cgroup cpu.rt_runtime_us", ...
    runtime_us: int
    period_us: int

    @property
    def stall_ns(self) -> float:
        return (self.period_us - self.runtime_us) * 1000.0

    @property
    def period_ns(self) -> float:
        return self.period_us * 1000.0


@dataclass
class Throttling:
    """Events of a probe run that overlap RT throttling windows, and what was excluded."""

    budget: ThrottleBudget | None  # the budget whose windows matched; None: none detected
    phase_ns: float | None = None  # the first window's end (probe time)
    anchors: int = 0  # long events whose ends lie whole periods apart
    excluded_ns: list[float] = field(default_factory=list)  # per throttled event
    remaining_ns: dict[int, float] = field(default_factory=dict)  # event index -> duration left
    phases: int = 0  # families of windows found (each its own phase; see _families)
    unanchored: int = 0  # stalls of the budget's stall size at no boundary, excluded
    overlapped: int = 0  # events running on past a boundary: the part after it is kept
    ambiguous_ns: float = 0.0  # longest kept event of at least ANCHOR_SHARE of the stall
    merged: int = 0  # a competitor's quantum plus a window: the window excluded
    complementary: int = 0  # windows of a second budget (see classify_throttling)
    quantum_ns: float | None = None  # a competitor's recurring gap, never excluded

    @property
    def count(self) -> int:
        return len(self.excluded_ns)

    @property
    def total_ns(self) -> float:
        return sum(self.excluded_ns)

    @property
    def max_ns(self) -> float:
        return max(self.excluded_ns, default=0.0)


# A throttled event ends at the period boundary, give or take the period timer's lateness
# (a few ms in a guest whose own host takes the CPU away at times: docs/latency.md).
PHASE_SLACK_NS = 4e6
MIN_ANCHOR_NS = 1e6  # below this, a delay is too short to be told from other delays
ANCHOR_SHARE = 0.5  # an anchor is a delay of at least this share of the budget's stall
ANCHOR_MAX = 2.0  # and at most this many stalls (a window merged with a competitor's quantum)
DRIFT = 0.01  # per period: windows of the fair server recur at slightly over the period
STALL_ALLOWANCE = 1.05  # a stall measured up to 5% over period - runtime is still the stall
# A stall of throttling size: this share of the budget's stall (period - runtime); the fair
# server's windows run a little over it (its 50 ms plus the probe's loop and the timer's
# lateness; the windows measured: docs/latency.md).
SIZE_BAND = (0.85, 1.10)
UNANCHORED_MIN_NS = 20e6  # shorter stalls cannot be told from other delays by their size
QUANTUM_SHARE = 0.03  # gaps within 3% of a competitor's recurring gap are its quantum
COMPLEMENT_SHARE = 0.1  # two budgets' windows of one period add up to the stall within 10%


def _quantum(events: list[tuple[float, float]], b: ThrottleBudget, duration_ns: float):
    """A competitor's quantum (SCHED_RR, compete=rr): the most common gap of at least 1 ms,
    if it recurs more than twice per period of b (b's windows recur once per period)."""
    long = sorted(d for _t, d in events if d >= MIN_ANCHOR_NS)
    best: list[float] = []
    for d in long:
        lo = bisect.bisect_left(long, d * (1 - QUANTUM_SHARE))
        hi = bisect.bisect_right(long, d * (1 + QUANTUM_SHARE))
        if hi - lo > len(best):
            best = long[lo:hi]
    if len(best) <= 2 * max(1.0, duration_ns / b.period_ns) + 1:
        return None
    return best[len(best) // 2]


def _is_quantum(d: float, q: float | None) -> bool:
    return q is not None and abs(d - q) <= QUANTUM_SHARE * q


# The main family must show a window in this share of the run's periods (a budget of a short
# period would otherwise match a long-period mechanism's windows); not every period shows
# one when the fair server's windows take their place (docs/latency.md).
MIN_DENSITY = 1 / 3


def events_of(data: dict[str, Any]) -> list[tuple[float, float]] | None:
    """(start ns since the probe started, duration ns) of the probe's long samples; None if the
    probe predates events (version 1 output)."""
    ev = data.get("events")
    if not isinstance(ev, dict):
        return None
    return [(float(t) * 1e9, float(d)) for t, d in ev.get("points", [])]


def _slack(period: float) -> float:
    """How far from a window end a throttled event may end: the timer's lateness, at most a
    tenth of the period (a container target's own 10 ms period, scenarios/rt_budget.py)."""
    return min(PHASE_SLACK_NS, period / 10)


def _tolerance(k: int, period: float) -> float:
    """How far the k-th boundary after a known one may lie from k periods: the timer's
    lateness plus 1% per period (the fair server's deferred windows drift by ~0.4%), at most
    a tenth of the period (a short period's timer does not drift; far anchors chain through
    nearer ones)."""
    return _slack(period) + min(DRIFT * abs(k) * period, period / 10)


def _chains(anchors: list[tuple[float, float]], period: float) -> list[list[int]]:
    """Groups of anchors (end, duration) whose ends lie whole periods apart."""
    parent = list(range(len(anchors)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, (ei, _) in enumerate(anchors):
        for j in range(i + 1, len(anchors)):
            gap = anchors[j][0] - ei
            k = round(gap / period)
            if k >= 1 and abs(gap - k * period) <= _tolerance(k, period):
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(anchors)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _size(d: float, b: ThrottleBudget) -> bool:
    """Is a delay of `d` ns the size of b's throttling stall?"""
    return SIZE_BAND[0] * b.stall_ns <= d <= SIZE_BAND[1] * b.stall_ns


def _boundaries(ends: list[float], b: ThrottleBudget, duration_ns: float) -> list[float]:
    """Window ends a family of anchors (their ends) implies over the run: its own period (the
    median spacing, as the fair server's drifts) projected from the first end, plus the
    anchors' ends themselves."""
    # two anchors at one boundary (both within its slack) say nothing about the period
    pairs = [
        (e2 - e1, round((e2 - e1) / b.period_ns)) for e1, e2 in zip(ends, ends[1:], strict=False)
    ]
    spans = sorted(gap / k for gap, k in pairs if k >= 1)
    period = spans[len(spans) // 2] if spans else b.period_ns
    first = ends[0] - period * math.floor(ends[0] / period)
    return [first + k * period for k in range(int(duration_ns / period) + 2)] + ends


def _families(
    events: list[tuple[float, float]], b: ThrottleBudget, duration_ns: float
) -> list[tuple[list[float], int]]:
    """(window ends, anchors that showed them) of each family of b's throttling windows the
    events show; empty if none.

    Anchors are delays of at least ANCHOR_SHARE of the budget's stall (a stall is shorter by
    the time the task did not run in its period; a competitor's quantum is shorter still) and
    at most ANCHOR_MAX stalls.
    Anchors whose ends lie whole periods apart form a family. The main family is the largest
    (among families at most one smaller, the one whose durations lie closest to the stall: a
    competitor's quantum that divides the period also recurs); it needs two anchors and one
    in MIN_DENSITY of the periods, or one of the stall's size in a run shorter than two
    periods. Natively two mechanisms stop a
    busy real-time task, each with its own phase: RT throttling (windows end at the period
    timer) and, on kernels >= 6.12, the fair server (a deferred deadline server giving normal
    tasks 50 ms per second, starting when they start starving); with normal tasks starving
    beside the probe the windows of one run fall into two families. So every further family
    of two or more anchors whose durations are of the stall's size counts too."""
    if b.stall_ns <= 0 or b.period_ns <= 0:
        return []
    least = max(MIN_ANCHOR_NS, b.stall_ns * ANCHOR_SHARE)
    most = b.stall_ns * ANCHOR_MAX
    q = _quantum(events, b, duration_ns)  # a competitor's quantum recurs too: not an anchor
    anchors = sorted((t + d, d) for t, d in events if least <= d <= most and not _is_quantum(d, q))
    if not anchors:
        return []
    chains = _chains(anchors, b.period_ns)
    top = max(len(c) for c in chains)

    def deviation(c: list[int]) -> float:
        devs = sorted(abs(anchors[i][1] - b.stall_ns) for i in c)
        return devs[len(devs) // 2]

    best = min((c for c in chains if len(c) >= top - 1), key=lambda c: (deviation(c), -len(c)))
    periods = duration_ns / b.period_ns
    if len(best) >= 2 and len(best) >= MIN_DENSITY * (periods - 1):
        pass
    elif not (
        len(best) == 1 and periods < 2 and anchors[best[0]][1] <= b.stall_ns * STALL_ALLOWANCE
    ):
        return []
    out = [best]
    for c in chains:
        durations = sorted(anchors[i][1] for i in c)
        if c is not best and len(c) >= 2 and _size(durations[len(durations) // 2], b):
            out.append(c)
    return [(_boundaries([anchors[i][0] for i in c], b, duration_ns), len(c)) for c in out]


def classify_throttling(
    events: list[tuple[float, float]], budgets: list[ThrottleBudget], duration_ns: float
) -> Throttling:
    """Which long samples were RT throttling windows, and how much of each to exclude.

    The first budget whose windows the events show wins (`_families`). A throttled task
    resumes when the period timer refills the budget, so a throttled event ends at a window
    end of a family (within _slack; delays under MIN_ANCHOR_NS there are the kernel's
    own work). Of such an event at most the stall (period - runtime, plus 5%) is excluded; the
    rest (a competitor's quantum before the budget ran out) is kept. An event that runs on
    past a window end (the task did not get the CPU back at once: a competitor's quantum went
    on) has at most the stall before that end excluded, the rest kept (`overlapped`). An
    event of the stall's size (SIZE_BAND) at no window end is excluded whole (`unanchored`):
    with normal tasks starving, a window of the fair server can stand alone (its phase
    restarts when they migrate). Without any family, the first budget's stall size still
    identifies such stalls. Longer or shorter events at no window end stay latency; the
    longest of them from ANCHOR_SHARE of the stall up is recorded (`ambiguous_ns`)."""
    chosen: tuple[ThrottleBudget, list[tuple[list[float], int]]] | None = None
    for b in budgets:
        found = _families(events, b, duration_ns)
        if found:
            chosen = (b, found)
            break
    if chosen is None:  # the innermost budget's stall size alone (beside a quantum, too)
        b = budgets[0] if budgets else None
        if b is None or b.stall_ns < UNANCHORED_MIN_NS:
            return Throttling(None)
        q = _quantum(events, b, duration_ns) or 0.0
        if not any(_size(d, b) or (q and d > q and _size(d - q, b)) for _t, d in events):
            return Throttling(None)
        chosen = (b, [])
    b, families = chosen
    boundaries = sorted(x for ends, _n in families for x in ends)
    out = Throttling(
        b,
        boundaries[0] if boundaries else None,
        sum(n for _ends, n in families),
        phases=len(families),
    )
    cap = b.stall_ns * STALL_ALLOWANCE
    least = max(MIN_ANCHOR_NS, b.stall_ns * ANCHOR_SHARE)
    slack = _slack(b.period_ns)
    q = out.quantum_ns = _quantum(events, b, duration_ns)
    for i, (t, d) in enumerate(events):
        end = t + d
        if d < MIN_ANCHOR_NS or _is_quantum(d, q):
            continue
        # an event longer than the period holds several window ends: no sign of throttling
        inside = [x for x in boundaries if t + MIN_ANCHOR_NS <= x < end - slack]
        if any(abs(end - x) <= slack for x in boundaries):
            excluded = min(d, cap)
        elif q and d > q and _size(d - q, b) and b.stall_ns >= UNANCHORED_MIN_NS:
            excluded = d - q  # the quantum went on around a window: the quantum stays
            out.merged += 1
        elif inside and d < b.period_ns:  # the window ended inside: the rest stays latency
            excluded = min(inside[0] - t, cap)
            out.overlapped += 1
        elif _size(d, b) and b.stall_ns >= UNANCHORED_MIN_NS:
            excluded = d
            out.unanchored += 1
        else:
            if d >= least:
                out.ambiguous_ns = max(out.ambiguous_ns, d)
            continue
        out.excluded_ns.append(excluded)
        out.remaining_ns[i] = d - excluded
        if d - excluded >= least and not _is_quantum(d - excluded, q):
            out.ambiguous_ns = max(out.ambiguous_ns, d - excluded)
    if families:
        _complementary(events, out, b, q)
    return out


def _complementary(
    events: list[tuple[float, float]], out: Throttling, b: ThrottleBudget, q: float | None
) -> None:
    """Windows of a second budget of the same period: a container's group and the host's
    root both count a busy task's run time, each on its own period timer, so the task loses
    one stall per period in two windows, one at each timer's phase (docs/latency.md). Shorter
    events that complete a throttled window of the same period to the
    stall, in two or more periods whose ends lie whole periods apart, are excluded whole."""
    cap = b.stall_ns * STALL_ALLOWANCE
    done = [(events[i][0] + events[i][1], events[i][1]) for i in out.remaining_ns]
    cands: list[tuple[float, float, int]] = []
    for i, (t, d) in enumerate(events):
        if i in out.remaining_ns or d < MIN_ANCHOR_NS or d >= b.stall_ns or _is_quantum(d, q):
            continue
        if any(
            abs(e - (t + d)) < b.period_ns / 2
            and abs(d + min(pd, cap) - b.stall_ns) <= COMPLEMENT_SHARE * b.stall_ns
            for e, pd in done
        ):
            cands.append((t + d, d, i))
    for chain in _chains([(e, d) for e, d, _i in cands], b.period_ns):
        if len(chain) < 2:
            continue
        for k in chain:
            i = cands[k][2]
            out.excluded_ns.append(events[i][1])
            out.remaining_ns[i] = 0.0
            out.complementary += 1


def stats_without(data: dict[str, Any], th: Throttling) -> dict[str, float]:
    """The probe's statistics (µs) with the throttled parts of its events left out: maximum
    and percentiles from the fine histogram bins below the event threshold plus the events'
    exact (remaining) durations."""
    stats = {k: float(v) / 1000.0 for k, v in data["stats_ns"].items()}
    events = events_of(data)
    if not th.count or events is None:
        return stats
    n = int(data.get("samples") or 0)
    threshold = float(data["events"]["threshold_ns"])
    values: list[tuple[float, int]] = []  # (ns, count)
    for lo, hi, count in data.get("histogram", {}).get("bins", []):
        if lo >= threshold:
            continue  # every sample here is an event
        inside = sum(1 for _t, d in events if lo <= d < hi) if hi > threshold else 0
        values.append(((lo + hi) / 2, int(count) - inside))
    floor = float(data["stats_ns"]["min"])  # a fully excluded sample counts as undisturbed
    values += [(max(floor, th.remaining_ns.get(i, d)), 1) for i, (_t, d) in enumerate(events)]
    values.sort()
    total = sum(c for _v, c in values) or 1

    def pct(p: float) -> float:
        rank = max(1, min(total, -(-int(p * total * 1000) // 100000)))
        seen = 0
        for v, c in values:
            seen += c
            if seen >= rank:
                return v / 1000.0
        return values[-1][0] / 1000.0

    stats.update(p99=pct(99), p999=pct(99.9), p9999=pct(99.99), max=values[-1][0] / 1000.0)
    stats["mean"] = stats["mean"] - th.total_ns / max(1, n) / 1000.0
    return stats
