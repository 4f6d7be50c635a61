"""ffmpeg as a conference user (workloads/conference.py): a publisher sends a synthetic
webcam over RTMP, a viewer plays one stream without decoding it. Both report with
`-progress pipe:1`; this module builds their argv, parses the progress blocks and turns the
blocks of one step into frames delivered and added delay.

Delay is measured from the stream's own timestamps: a publisher paced with `-re` sends
frame pts p at wall time ~ start + p, and a viewer receives it at wall time w, so w - p is
its lag plus a constant (nginx-rtmp restarts a subscriber's timestamps at 0). The added
delay of a stream at time t is its lag minus the least lag it has had since it joined,
minus the same for its publisher (a publisher that fell behind real time delays every
viewer, but that is the client's fault, not the server's). It is what the server's queues
add while users join; the constant path delay at join (LAN: about 1 ms) is not in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import WorkloadError

# Progress blocks per second: the delay resolution is one frame (67 ms at 15 fps) anyway.
STATS_PERIOD_S = 0.5
# Sorenson Spark (FLV1) is what a Flash webcam sent to BigBlueButton 0.81; H.264 is the
# modern webcam codec. Both are encoded live from a generated test pattern.
CODECS = {
    "flv": ["-c:v", "flv"],
    "libx264": ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency"],
}
VIDEO_SIZES = ("160x120", "320x240", "640x480", "800x600", "1280x720")


@dataclass(frozen=True)
class StreamSpec:
    """One published video stream: a test pattern encoded at a fixed bitrate."""

    size: str = "320x240"
    fps: int = 15
    bitrate_kbps: int = 256
    codec: str = "flv"


# every client: no banner, no stdin, errors only; a progress block every STATS_PERIOD_S
QUIET = ["ffmpeg", "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error"]
PROGRESS = ["-progress", "pipe:1", "-stats_period", str(STATS_PERIOD_S)]


def publish_argv(url: str, spec: StreamSpec, max_s: float) -> list[str]:
    """A webcam: testsrc2 paced at its frame rate (-re), one keyframe a second (a viewer
    that joins starts within a second), at most `max_s` seconds (a safety net: a client
    outlives nothing of virtbench's)."""
    rate = f"{spec.bitrate_kbps}k"
    return [
        *QUIET,
        "-re",
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=size={spec.size}:rate={spec.fps}",
        *CODECS[spec.codec],
        "-b:v",
        rate,
        "-maxrate",
        rate,
        "-bufsize",
        rate,
        "-g",
        str(spec.fps),
        "-pix_fmt",
        "yuv420p",
        "-an",
        "-t",
        f"{max_s:.0f}",
        "-f",
        "flv",
        *PROGRESS,
        url,
    ]


def play_argv(url: str, max_s: float) -> list[str]:
    """A viewer: reads the stream and throws the packets away (-c copy -f null): it costs
    the client almost nothing, so the client CPU carries many viewers."""
    return [
        *QUIET,
        "-rw_timeout",
        "10000000",  # µs: a server that stops sending ends the viewer with an error
        # the stream's codec is known from its first packets: without this ffmpeg would probe
        # for 5 s before its first progress block
        "-analyzeduration",
        "500000",
        "-fflags",
        "nobuffer",
        "-i",
        url,
        "-map",
        "0:v",
        "-c",
        "copy",
        "-t",
        f"{max_s:.0f}",
        "-f",
        "null",
        *PROGRESS,
        "-",
    ]


@dataclass(frozen=True)
class Progress:
    """One `-progress` block, stamped with the monotonic time it was read."""

    t: float
    frame: int
    out_time_s: float | None  # pts of the last packet written; None before the first


class ProgressParser:
    """Feeds `-progress` lines; a block ends with `progress=continue|end`."""

    def __init__(self) -> None:
        self._block: dict[str, str] = {}

    def feed(self, line: str, t: float) -> Progress | None:
        key, sep, value = line.strip().partition("=")
        if not sep:
            return None
        if key != "progress":
            self._block[key] = value.strip()
            return None
        block, self._block = self._block, {}
        try:
            frame = int(block.get("frame", "0"))
        except ValueError:
            frame = 0
        raw = block.get("out_time_us", "N/A")
        try:
            out = int(raw) / 1e6
        except ValueError:
            out = None
        return Progress(t, frame, out if out is not None and out >= 0 else None)


def parse_progress(text: str, stamps: list[float] | None = None) -> list[Progress]:
    """Every block of a captured `-progress` output (stamped 0, 1, ... unless given)."""
    parser, out = ProgressParser(), []
    for line in text.splitlines():
        p = parser.feed(line, stamps[len(out)] if stamps else float(len(out)))
        if p is not None:
            out.append(p)
    return out


def window(points: list[Progress], a: float, b: float) -> list[Progress]:
    return [p for p in points if a <= p.t <= b]


def fps(points: list[Progress], a: float, b: float) -> float | None:
    """Frames per second over [a, b] from the first and last block inside it (None: fewer
    than two blocks, e.g. a stream that stalled)."""
    w = window(points, a, b)
    if len(w) < 2 or w[-1].t <= w[0].t:
        return None
    return (w[-1].frame - w[0].frame) / (w[-1].t - w[0].t)


def stream_rate(points: list[Progress], a: float, b: float) -> float | None:
    """Frames per second of stream time (pts) over the blocks in [a, b]: a publisher's frame
    rate, exact to its timestamps (None: fewer than two blocks with a pts, or no progress)."""
    w = [p for p in window(points, a, b) if p.out_time_s is not None]
    if len(w) < 2 or w[-1].out_time_s <= w[0].out_time_s:  # type: ignore[operator]
        return None
    return (w[-1].frame - w[0].frame) / (w[-1].out_time_s - w[0].out_time_s)  # type: ignore[operator]


def frames_delivered(
    viewer: list[Progress], publisher: list[Progress], a: float, b: float
) -> tuple[float, float] | None:
    """(frames one viewer received, frames the stream time it received holds) over its
    blocks in [a, b]. A frame the server dropped advances the viewer's pts but not its
    frame count; a frame that came late advances neither yet, so lateness (a busy client,
    the window's edge between two 0.5 s blocks) is no loss here: the delay rule judges it.
    A viewer whose pts did not advance at all lost the window's frames. None: the
    publisher's rate is unknown in the window."""
    rate = stream_rate(publisher, a, b)
    if rate is None:
        return None
    w = [p for p in window(viewer, a, b) if p.out_time_s is not None]
    if len(w) < 2 or w[-1].out_time_s <= w[0].out_time_s:  # type: ignore[operator]
        return 0.0, rate * (b - a)
    return float(w[-1].frame - w[0].frame), rate * (w[-1].out_time_s - w[0].out_time_s)  # type: ignore[operator]


def excess_lag(points: list[Progress], at: float) -> float | None:
    """Seconds the stream is behind its best moment, at the last block read by `at`: its
    lag (t - pts) minus the least lag of any earlier block."""
    seen = [p for p in points if p.t <= at and p.out_time_s is not None]
    if not seen:
        return None
    best = min(p.t - p.out_time_s for p in seen)  # type: ignore[operator]
    last = seen[-1]
    return last.t - last.out_time_s - best  # type: ignore[operator]


def added_delay_s(viewer: list[Progress], publisher: list[Progress], at: float) -> float | None:
    """The delay the path through the server added to one viewed stream by `at` (>= 0)."""
    v, p = excess_lag(viewer, at), excess_lag(publisher, at)
    if v is None:
        return None
    return max(0.0, v - (p or 0.0))


def _excess_series(points: list[Progress]) -> list[tuple[float, float]]:
    """(t, excess lag) at every block: its lag minus the least lag up to it."""
    out, best = [], None
    for p in points:
        if p.out_time_s is None:
            continue
        lag = p.t - p.out_time_s
        best = lag if best is None else min(best, lag)
        out.append((p.t, lag - best))
    return out


def worst_lag_s(points: list[Progress], a: float, b: float) -> float | None:
    """How far one stream fell behind its best moment at worst in [a, b] (a publisher: behind
    its `-re` pace; None: no block with a timestamp in the window)."""
    lags = [lag for t, lag in _excess_series(points) if a <= t <= b]
    return max(lags) if lags else None


def worst_added_delay_s(
    viewer: list[Progress], publisher: list[Progress], a: float, b: float
) -> float | None:
    """The largest added delay of one viewed stream at any of its blocks in [a, b]: a viewer
    that stalls and then catches up inside a step (its frames delivered late, in a burst)
    shows here, not at the step's end."""
    pub = _excess_series(publisher)
    worst, j, p_excess = None, 0, 0.0
    for t, v_excess in _excess_series(viewer):
        while j < len(pub) and pub[j][0] <= t:
            p_excess, j = pub[j][1], j + 1
        if a <= t <= b:
            d = max(0.0, v_excess - p_excess)
            worst = d if worst is None else max(worst, d)
    return worst


def check_encoder(codec: str) -> None:
    if codec not in CODECS:
        raise WorkloadError(f"unknown codec {codec!r}; allowed: {sorted(CODECS)}")
