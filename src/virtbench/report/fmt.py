"""Number formatting shared by the HTML and Markdown renderers."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable

from ..analysis.colocation import BESIDE_LABEL, UNPAIRED


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


def shown(value: float, digits: int) -> float:
    """`value` as printed with `digits` decimals, never -0.0: a change that rounds to zero
    has no sign ("-0.0%" reads as a measured loss)."""
    rounded = round(value, digits)
    return 0.0 if rounded == 0 else rounded


def pct(fraction: float | None, digits: int = 1) -> str:
    return "–" if fraction is None else f"{shown(fraction * 100, digits):.{digits}f}%"


def signed_pct(value: float | None, digits: int = 1, space: str = "") -> str:
    """A percentage that is already in % units, with its sign; zero has none."""
    if value is None:
        return "–"
    v = shown(value, digits)
    return f"{v:.{digits}f}{space}%" if v == 0 else f"{v:+.{digits}f}{space}%"


def label_value(v: object) -> str:
    """A label or option value as written in a campaign: true/false, JSON for lists."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


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


def is_container(v: object) -> bool:
    """A dict or list label (groups hold them as JSON text): a cell's schedule, env params."""
    if isinstance(v, dict | list):
        return True
    if not isinstance(v, str) or v[:1] not in "{[":
        return False
    try:
        return isinstance(json.loads(v), dict | list)
    except ValueError:
        return False


def digest(v: object) -> str:
    """A short stable stand-in for a long value: tells two values apart without showing them."""
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return "#" + hashlib.sha1(text.encode()).hexdigest()[:6]


def dims(pairs: tuple[tuple[str, object], ...], digests: bool = True) -> str:
    """Dimension labels for display: byte-valued ones shortened (block_size=64K), dict and list
    ones (a co-location cell's schedule, env_params, solo_peak: hundreds of characters) as a
    short digest, so two results that differ only there still read differently, or left out
    (`digests=False`, for a table whose rows other labels tell apart); their values are in
    `virtbench results`."""
    out = []
    for k, v in pairs:
        if k == BESIDE_LABEL:
            out.append(beside(v))
        elif k.endswith("_bytes") and isinstance(v, int | float) and not isinstance(v, bool):
            out.append(f"{k[: -len('_bytes')]}={size(v)}")
        elif is_container(v):
            if digests:
                out.append(f"{k}={digest(v)}")
        else:
            out.append(f"{k}={v}")
    return ", ".join(out)


def beside(v: object) -> str:
    """The target point a different:SIZE neighbour's run ran beside (analysis.colocation
    beside_targets): 'beside target 30 KB'."""
    if v == UNPAIRED:
        return "beside target: unknown (runs not paired)"
    return f"beside target {v} KB" if isinstance(v, int | float) else f"beside target {v}"


def test(test_case: str, pairs: tuple[tuple[str, object], ...], digests: bool = True) -> str:
    """A test case with its dimension labels, as every table names it."""
    shown = dims(pairs, digests)
    return test_case + (f" [{shown}]" if shown else "")


def int_ranges(values: Iterable[int]) -> str:
    """Integers as runs: 0–9, 12, 14–15."""
    vs = sorted(set(values))
    runs: list[list[int]] = []
    for v in vs:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)
