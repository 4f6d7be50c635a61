"""Number formatting shared by the HTML and Markdown renderers."""

from __future__ import annotations

import math


def num(v: float | None) -> str:
    """About four significant digits, no exponent for everyday magnitudes."""
    if v is None:
        return "–"
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e9 or a < 1e-3:
        return f"{v:.3e}"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 10:
        return f"{v:.2f}"
    return f"{v:.3f}"


def pct(fraction: float | None, digits: int = 1) -> str:
    return "–" if fraction is None else f"{fraction * 100:.{digits}f}%"


def signed_pct(value: float | None, digits: int = 1) -> str:
    """A percentage that is already in % units, with its sign."""
    return "–" if value is None else f"{value:+.{digits}f}%"


def ratio(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def mean_ci(mean: float | None, half: float | None, unit: str = "") -> str:
    if mean is None:
        return "–"
    body = num(mean) if half is None else f"{num(mean)} ± {num(half)}"
    return f"{body} {unit}".rstrip()


def size(v: float) -> str:
    """Bytes as 4K / 64K / 1M / 2G (binary units)."""
    for unit, n in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(v) >= n:
            q = v / n
            return f"{q:.0f}{unit}" if q == int(q) else f"{q:.3g}{unit}"
    return f"{v:.0f}"


def dims(pairs: tuple[tuple[str, object], ...]) -> str:
    """Dimension labels for display: byte-valued ones shortened (block_size=64K)."""
    out = []
    for k, v in pairs:
        if k.endswith("_bytes") and isinstance(v, int | float) and not isinstance(v, bool):
            out.append(f"{k[: -len('_bytes')]}={size(v)}")
        else:
            out.append(f"{k}={v}")
    return ", ".join(out)
