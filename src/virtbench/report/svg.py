"""Inline SVG charts generated in Python: bar charts with error bars and line charts.

No JavaScript and no external resources, so a report opens offline. Hovering a bar or point
shows its exact value through SVG <title> tooltips. Public helpers for suite sections:
`bar_chart`, `line_chart`, `Bar`, `Line`, `PALETTE`.

Marks carry data attributes so a browser test (tests/figures) can check a figure against its
legend: `data-series` on every drawn series, `data-legend` on every legend entry, `data-gap`
on a bar with no result, `data-empty` on a chart with no data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .fmt import num, size
from .html import escape

# Colour-blind-friendly (Okabe-Ito) then a few extra; platforms keep one colour per report.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#D55E00",
    "#56B4E9",
    "#F0E442",
    "#000000",
    "#8C564B",
    "#7F7F7F",
)

FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(ticks[-1] + step)
    return ticks


def tick(v: float) -> str:
    """Axis tick text: no trailing zeros (0.5, 2.5, 1,000); millions and more as 150M, 2.5G
    (a 12-character tick ran past the left edge of the plot)."""
    for scale, suffix in ((1e9, "G"), (1e6, "M")):
        if abs(v) >= scale:
            return f"{v / scale:.4g}{suffix}"
    return num(v) if abs(v) >= 1000 else f"{v:.4g}"


def bytes_label(v: float) -> str:
    return size(v)


@dataclass
class Bar:
    value: float | None  # None: no result (drawn as a gap with a note)
    low: float | None = None
    high: float | None = None
    note: str = ""  # tooltip extra, e.g. "n=3, CV 4%"
    warn: bool = False  # drawn hatched-outline: noisy or partly invalid


@dataclass
class Line:
    name: str
    colour: str
    points: list[tuple[float, float, float | None, float | None]] = field(default_factory=list)
    # x -> reason: points measured but flagged invalid, drawn as hollow red-ringed markers
    # on the line (so a fall after saturation shows) instead of being dropped
    invalid: dict[float, str] = field(default_factory=dict)
    dashed: bool = False


def _frame(width: int, height: int, title: str) -> list[str]:
    # a title wider than the chart is clipped (the full one is the tooltip and aria-label)
    shown = _clip(title, int((width - 12) / 6.8))
    return [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{width / 2:.0f}" y="14" text-anchor="middle" {FONT} font-weight="bold">'
        f"{escape(shown)}</text>",
    ]


def _y_axis(out: list[str], ticks: Sequence[float], y: Callable, x0: float, x1: float) -> None:
    for t in ticks:
        yy = y(t)
        out.append(
            f'<line x1="{x0:.1f}" y1="{yy:.1f}" x2="{x1:.1f}" y2="{yy:.1f}" stroke="#e3e3e3"/>'
        )
        out.append(
            f'<text x="{x0 - 4:.1f}" y="{yy + 4:.1f}" text-anchor="end" {FONT}>{tick(t)}</text>'
        )


def bar_chart(
    title: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, str]],
    bars: dict[tuple[str, str], Bar],
    unit: str,
    width: int | None = None,
    height: int = 280,
    ref: float | None = None,
    cap: float | None = None,
) -> str:
    """Grouped bars: x groups (e.g. scenarios), one bar per series (platform, colour),
    whiskers from low to high (the 95% CI). Width grows with the number of bars. `ref`: a
    dashed horizontal line at that value (1.0 of a chart of ratios). `cap`: the axis ends
    there at most; a whisker reaching beyond is cut at the top and drawn without its end
    tick (one wide interval of n=3 must not flatten every other bar)."""
    if width is None:
        legend = sum(24 + 6.5 * len(n) for n, _ in series) + 90
        bars_w = 110 + len(groups) * (len(series) * 44 + 30)
        width = int(min(760, max(300, legend, bars_w, 7 * len(title) + 20)))
    left, right, top, bottom = 70, 10, 26, 60
    extra = (legend_rows([n for n, _ in series], left, width) - 1) * LEGEND_ROW
    height += extra
    bottom += extra
    values = [
        v
        for b in bars.values()
        for v in (b.value, b.low, b.high)
        if v is not None and math.isfinite(v)
    ]
    means = [b.value for b in bars.values() if b.value is not None]
    # a positive quantity keeps its axis at 0: a wide CI reaching below 0 is clipped there
    floor = 0.0 if all(m >= 0 for m in means) else None
    if floor is not None:
        values = [max(v, floor) for v in values]
    if ref is not None:
        values.append(ref)
    if cap is not None:
        values = [min(v, cap) for v in values]
    ymin = min(0.0, *values) if values else 0.0
    ymax = max(values) if values else 1.0
    ticks = nice_ticks(ymin, ymax)
    lo, hi = ticks[0], ticks[-1]
    plot_h = height - top - bottom

    def y(v: float) -> float:
        return top + plot_h * (1 - (v - lo) / (hi - lo))

    out = _frame(width, height, title)
    _y_axis(out, ticks, y, left, width - right)
    out.append(
        f'<text x="12" y="{top + plot_h / 2:.0f}" transform="rotate(-90 12 {top + plot_h / 2:.0f})"'
        f' text-anchor="middle" {FONT}>{escape(unit)}</text>'
    )
    gw = (width - left - right) / max(len(groups), 1)
    bw = min(40.0, gw * 0.8 / max(len(series), 1))
    for gi, g in enumerate(groups):
        gx = left + gi * gw + (gw - bw * len(series)) / 2
        for si, (name, colour) in enumerate(series):
            b = bars.get((g, name))
            x = gx + si * bw
            if b is None or b.value is None:
                out.append(
                    f'<text x="{x + bw / 2:.1f}" y="{y(lo) - 4:.1f}" text-anchor="middle"'
                    f' {FONT} fill="#b00" data-gap="{escape(name)}">–'
                    f"<title>{escape(name)}: no valid result</title></text>"
                )
                continue
            y0, y1 = y(max(lo, 0.0)), y(b.value)
            tip = f"{name} · {g}: {num(b.value)} {unit}" + (f" ({b.note})" if b.note else "")
            stroke = ' stroke="#b00" stroke-width="2" stroke-dasharray="4 2"' if b.warn else ""
            out.append(
                f'<rect x="{x + 1:.1f}" y="{min(y0, y1):.1f}" width="{bw - 2:.1f}"'
                f' height="{abs(y0 - y1):.1f}" fill="{colour}"{stroke}'
                f' data-series="{escape(name)}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            if b.low is not None and b.high is not None:
                cx, b_low, b_high = x + bw / 2, max(b.low, lo), min(b.high, hi)
                out.append(
                    f'<path d="M{cx:.1f} {y(b_low):.1f}V{y(b_high):.1f}'
                    # no end tick where the whisker was clipped at the axis
                    + (f"M{cx - 4:.1f} {y(b_low):.1f}h8" if b_low == b.low else "")
                    + (f"M{cx - 4:.1f} {y(b_high):.1f}h8" if b_high == b.high else "")
                    + '" stroke="#222" stroke-width="1.2" fill="none"/>'
                )
        gx = left + gi * gw + gw / 2
        lines = "".join(
            f'<tspan x="{gx:.1f}" dy="{12 * (i > 0)}">{escape(line)}</tspan>'
            for i, line in enumerate(_label_lines(g, int(gw / 7)))
        )
        out.append(
            f'<text x="{gx:.1f}" y="{height - bottom + 16}" text-anchor="middle" {FONT}>'
            f"{lines}<title>{escape(g)}</title></text>"
        )
    if ref is not None:  # over the bars, so bars reaching past it still show where it is
        out.append(
            f'<line x1="{left}" y1="{y(ref):.1f}" x2="{width - right}" y2="{y(ref):.1f}"'
            ' stroke="#222" stroke-width="1" stroke-dasharray="6 3" data-ref="1"/>'
        )
    _legend(out, series, left, height - 18 - extra, width)
    out.append("</svg>")
    return "".join(out)


def line_chart(
    title: str,
    lines: Sequence[Line],
    x_label: str,
    y_label: str,
    log_x: bool = False,
    x_format: Callable[[float], str] | None = None,
    width: int = 760,
    height: int = 300,
) -> str:
    """Lines with optional vertical error bars; log2 x axis when log_x."""
    x_format = x_format or tick
    left, right, top, bottom = 70, 14, 26, 62
    # a long legend wraps: the chart grows by its extra rows, the plot keeps its height
    extra = (legend_rows([ln.name for ln in lines], left, width) - 1) * LEGEND_ROW
    height += extra
    bottom += extra
    pts = [p for ln in lines for p in ln.points if p[1] is not None]
    xs = [p[0] for p in pts if not log_x or p[0] > 0]
    # positive quantities keep the axis at 0: CI whiskers reaching below 0 are clipped there
    floor = 0.0 if all(p[1] >= 0 for p in pts) else -math.inf
    ys = [
        max(v, floor) for p in pts for v in (p[1], p[2], p[3]) if v is not None and math.isfinite(v)
    ]
    out = _frame(width, height, title)
    if not xs or not ys:
        out.append(f'<text x="20" y="60" {FONT} data-empty="1">no data</text></svg>')
        return "".join(out)

    def fx(v: float) -> float:
        return math.log2(v) if log_x else v

    xlo, xhi = fx(min(xs)), fx(max(xs))
    if xhi == xlo:
        xlo, xhi = xlo - 1, xhi + 1
    ticks = nice_ticks(min(0.0, min(ys)), max(ys))
    ylo, yhi = ticks[0], ticks[-1]
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(v: float) -> float:
        return left + plot_w * (fx(v) - xlo) / (xhi - xlo)

    def py(v: float) -> float:
        return top + plot_h * (1 - (v - ylo) / (yhi - ylo))

    _y_axis(out, ticks, py, left, width - right)
    if log_x:
        xt = [2.0**e for e in range(math.ceil(xlo), math.floor(xhi) + 1)]
        stride = max(1, math.ceil(len(xt) / 12))
        xt = xt[::stride]
    else:
        xt = [t for t in nice_ticks(xlo, xhi, 8) if xlo <= t <= xhi]
    for t in xt:
        out.append(
            # 16 px below the plot: clear of the y axis' bottom tick label
            f'<text x="{px(t):.1f}" y="{height - bottom + 16}" text-anchor="middle" {FONT}>'
            f"{escape(x_format(t))}</text>"
        )
        out.append(
            f'<line x1="{px(t):.1f}" y1="{top}" x2="{px(t):.1f}" y2="{top + plot_h}"'
            ' stroke="#f0f0f0"/>'
        )
    out.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - bottom + 30}" text-anchor="middle"'
        f" {FONT}>{escape(x_label)}{' (log scale)' if log_x else ''}</text>"
    )
    out.append(
        f'<text x="12" y="{top + plot_h / 2:.0f}" transform="rotate(-90 12 {top + plot_h / 2:.0f})"'
        f' text-anchor="middle" {FONT}>{escape(y_label)}</text>'
    )
    for ln in lines:
        good = sorted(p for p in ln.points if p[1] is not None and (not log_x or p[0] > 0))
        if not good:
            continue
        d = "M" + "L".join(f"{px(x):.1f} {py(v):.1f}" for x, v, _, _ in good)
        dash = ' stroke-dasharray="5 3"' if ln.dashed else ""
        out.append(
            f'<path d="{d}" stroke="{ln.colour}" stroke-width="1.8" fill="none"{dash}'
            f' data-series="{escape(ln.name)}"/>'
        )
        for x, v, lo, hi in good:
            if lo is not None and hi is not None:
                out.append(
                    f'<path d="M{px(x):.1f} {py(max(lo, floor)):.1f}V{py(hi):.1f}"'
                    f' stroke="{ln.colour}"'
                    ' stroke-width="1"/>'
                )
            why = ln.invalid.get(x)
            if why is not None:  # measured, flagged: a hollow marker ringed in red
                out.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="4" fill="#fff"'
                    f' stroke="#b00" stroke-width="1.6" data-invalid="{escape(ln.name)}">'
                    f"<title>{escape(ln.name)}: {escape(x_format(x))} → {num(v)}, invalid: "
                    f"{escape(why)}</title></circle>"
                )
            elif len(good) <= 60:  # markers only where they stay readable
                out.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="2.6" fill="{ln.colour}">'
                    f"<title>{escape(ln.name)}: {escape(x_format(x))} → {num(v)}</title></circle>"
                )
    _legend(out, [(ln.name, ln.colour) for ln in lines], left, height - 14 - extra, width)
    out.append("</svg>")
    return "".join(out)


LEGEND_ROW = 15  # px per legend row


def _legend_width(name: str) -> float:
    return 24 + 6.5 * len(name)


def legend_rows(series: Sequence[str], x: float, width: float) -> int:
    """How many rows the legend needs when entries wrap at the chart's right edge."""
    rows, at = 1, x
    for name in series:
        w = _legend_width(name)
        if at > x and at + w > width - 4:
            rows, at = rows + 1, x
        at += w
    return rows


def _legend(
    out: list[str],
    series: Sequence[tuple[str, str]],
    x: float,
    y: float,
    width: float | None = None,
) -> None:
    """Entries left to right; with `width`, wrapping onto further rows below `y`."""
    x0 = x
    for name, colour in series:
        w = _legend_width(name)
        if width is not None and x > x0 and x + w > width - 4:
            x, y = x0, y + LEGEND_ROW
        out.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{colour}"/>')
        out.append(
            f'<text x="{x + 14:.1f}" y="{y:.1f}" {FONT} data-legend="{escape(name)}">'
            f"{escape(name)}</text>"
        )
        x += w


def _label_lines(text: str, n: int) -> list[str]:
    """A group label in at most two lines of n characters: a long "kind:argument" goes on two
    lines, kind over argument, so "idle-neighbours:1" and ":3" no longer both read "idle-ne…"
    (the tooltip keeps the whole name)."""
    kind, colon, arg = text.partition(":")
    if len(text) <= max(n, 6) or not colon:
        return [_clip(text, n)]
    return [_clip(kind, n), _clip(arg, n)]


def _clip(text: str, n: int) -> str:
    n = max(n, 6)
    return text if len(text) <= n else text[: n - 1] + "…"
