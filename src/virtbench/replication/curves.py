"""The paper's points beside the measured curve: where a seed's paper drew a curve (or printed
a table over file sizes, matrix orders ...), its numbers sit in `findings/seedNNN-points.toml`
and each is set against the same ratio measured here at every value of one dimension label.

A curve is a ratio x / base per value of `x_dim` (`file_size_kb`, `order`), one series per x
side (e.g. one per number of idle guests), computed like a finding's ratio
(`compute.measure`: paired over the run's rounds, analysis/ratios.py). The file holds the
paper's numbers only, each series naming where they come from (`paper_text`)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..analysis.ratios import Ratio
from . import compute
from .load import FindingsError, _Reader, _side, seed_id
from .model import RATIO, SAME, Finding, Side

if TYPE_CHECKING:
    from ..report.data import ReportData


@dataclass(frozen=True)
class Series:
    name: str
    x: Side
    paper: tuple[tuple[float, float, float | None, float | None], ...]  # x, value, low, high
    paper_text: str
    platforms: tuple[str, ...] = ()  # () = the curve's
    span: tuple[float, float] | None = None  # the paper gives one level over this x range


@dataclass(frozen=True)
class Curve:
    seed: str
    id: str
    figure: str
    title: str
    test_cases: tuple[str, ...]
    platforms: tuple[str, ...]
    x_dim: str
    x_label: str
    base: Side
    series: tuple[Series, ...]


@dataclass(frozen=True)
class Point:
    x: float
    ratio: Ratio


@dataclass(frozen=True)
class Measured:
    """One series as measured in a run: its points, or why there are none."""

    curve: Curve
    series: Series
    platform: str | None
    test_case: str | None
    points: tuple[Point, ...]
    why: str = ""


def load(seed: str) -> tuple[Curve, ...]:
    """The seed's curves; () when its paper drew none that has numbers."""
    sid = seed_id(seed)
    name = f"seed{sid}-points.toml"
    path = resources.files(__package__).joinpath("findings", name)
    if not path.is_file():
        return ()
    return parse(path.read_text(), f"replication/findings/{name}", sid)


def parse(text: str, file: str, seed: str) -> tuple[Curve, ...]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FindingsError(file, "(file)", f"not valid TOML: {e}") from None
    _Reader(doc, file, "").done({"curve"})
    rows = doc.get("curve")
    if not isinstance(rows, list) or not rows:
        raise FindingsError(file, "curve", "at least one [[curve]] table is required")
    return tuple(_curve(row, file, seed, i) for i, row in enumerate(rows))


def _curve(row: Any, file: str, seed: str, i: int) -> Curve:
    where = f"curve[{i}]"
    if not isinstance(row, dict):
        raise FindingsError(file, where, "must be a table")
    r = _Reader(row, file, where + ".")
    items = row.get("series")
    if not isinstance(items, list) or not items:
        raise FindingsError(file, where + ".series", "at least one [[curve.series]] is required")
    curve = Curve(
        seed=seed,
        id=r.str("id"),
        figure=r.str("figure"),
        title=r.str("title"),
        test_cases=tuple(r.strs("test_case")),
        platforms=tuple(r.strs("platform", [])),
        x_dim=r.str("x_dim"),
        x_label=r.str("x_label"),
        base=_side(r, "base", file, where),
        series=tuple(_series(s, file, f"{where}.series[{j}]") for j, s in enumerate(items)),
    )
    r.done({"id", "figure", "title", "test_case", "platform", "x_dim", "x_label", "base", "series"})
    if not curve.platforms and not all(s.platforms for s in curve.series):
        raise FindingsError(file, where + ".platform", "is required (or one in every series)")
    return curve


def _series(row: Any, file: str, where: str) -> Series:
    if not isinstance(row, dict):
        raise FindingsError(file, where, "must be a table")
    r = _Reader(row, file, where + ".")
    span = None
    if "span" in row:
        lo_hi = r.floats("span")
        if len(lo_hi) != 2 or not 0 < lo_hi[0] < lo_hi[1]:
            raise FindingsError(file, where + ".span", "must be [from, to], 0 < from < to", lo_hi)
        span = (lo_hi[0], lo_hi[1])
    as_level = span is not None and "level" in row and "paper" not in row
    if not as_level and (span is not None or "level" in row or "paper" not in row):
        raise FindingsError(
            file, where, "give either paper = [[x, value], ...] or level with span = [from, to]"
        )
    if as_level:
        assert span is not None
        level = r.float("level")
        paper: tuple = ((span[0], level, None, None), (span[1], level, None, None))
    else:
        paper = tuple(_point(p, file, f"{where}.paper") for p in _list(row["paper"], file, where))
    series = Series(
        name=r.str("name"),
        x=_side(r, "x", file, where),
        paper=paper,
        paper_text=r.str("paper_text"),
        platforms=tuple(r.strs("platform", [])),
        span=span,
    )
    r.done({"name", "x", "paper", "paper_text", "platform", "span", "level"})
    return series


def _list(value: Any, file: str, where: str) -> list:
    if not isinstance(value, list) or not value:
        raise FindingsError(file, where + ".paper", "must be a non-empty list of points", value)
    return value


def _point(p: Any, file: str, where: str) -> tuple[float, float, float | None, float | None]:
    ok = (
        isinstance(p, list)
        and len(p) in (2, 4)
        and all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in p)
    )
    if not ok or (len(p) == 4 and not p[2] <= p[1] <= p[3]):
        raise FindingsError(
            file, where, "a point is [x, value] or [x, value, low, high], numbers > 0", p
        )
    low, high = (float(p[2]), float(p[3])) if len(p) == 4 else (None, None)
    return float(p[0]), float(p[1]), low, high


# --- measured ------------------------------------------------------------------------------
def measure(data: ReportData, curves: tuple[Curve, ...]) -> list[Measured]:
    return [_measure(data, c, s) for c in curves for s in c.series]


def _measure(data: ReportData, c: Curve, s: Series) -> Measured:
    platform = next((p for p in s.platforms or c.platforms if p in data.platforms), None)
    if platform is None:
        wanted = " / ".join(s.platforms or c.platforms)
        return Measured(c, s, None, None, (), f"no platform {wanted} in this run")
    tests = {g.key.test_case for g in data.groups}
    test = next((t for t in c.test_cases if t in tests), None)
    if test is None:
        return Measured(c, s, platform, None, (), f"no test case {' / '.join(c.test_cases)}")
    points = []
    for x in _x_values(data, c, s, platform, test):
        f = _finding(c, s, x)
        r = compute.measure(data, f, platform, test)
        if r is not None:
            points.append(Point(x, r))
    why = "" if points else f"no {s.x.scenario} / {c.base.scenario} ratio over {c.x_dim}"
    return Measured(c, s, platform, test, tuple(points), why)


def _x_values(data: ReportData, c: Curve, s: Series, platform: str, test: str) -> list[float]:
    """The values of x_dim that the series' x side measured (a grouping dimension, or the one
    value a run without it as a dimension gives every sample)."""
    found = set()
    for g in data.groups:
        if (g.key.platform, g.key.test_case) != (s.x.platform or platform, test):
            continue
        if g.key.scenario != s.x.scenario or g.key.role != "target":
            continue
        v = g.key.dim(c.x_dim)
        v = g.labels.get(c.x_dim) if v is None else v
        if isinstance(v, int | float) and not isinstance(v, bool):
            found.add(float(v))
    return sorted(found)


def _finding(c: Curve, s: Series, x: float) -> Finding:
    """The point as a finding's ratio (its verdict fields unused), so it is computed by the
    one path every finding takes."""
    value = int(x) if x.is_integer() else x
    return Finding(
        seed=c.seed,
        id=f"{c.id}:{s.name}:{value}",
        figure=c.figure,
        what=c.title,
        quantity=RATIO,
        expect=SAME,
        paper=1.0,
        paper_text=s.paper_text,
        band=(1.0, 1.0),
        analogue="",
        test_cases=c.test_cases,
        dims=((c.x_dim, value),),
        x=s.x,
        base=c.base,
    )
