"""Load and validate a seed's findings file (`findings/seedNNN.toml`), once."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

from ..errors import CampaignError, VirtbenchError
from .model import (
    EXPECTS,
    HOST_WEIGHT,
    HW_ACCEL,
    HYPERVISOR,
    MAX_RATIO,
    QUANTITIES,
    REQUIREMENTS,
    SUITE_SCORE,
    Finding,
    SeedFindings,
    Side,
)

SEEDS = ("000", "001", "002", "003", "004")


class FindingsError(CampaignError):
    """A findings file is malformed (same message shape as a campaign's)."""


class UnknownSeed(VirtbenchError):
    def __init__(self, seed: str) -> None:
        super().__init__(f"unknown seed {seed!r}; allowed: {', '.join(SEEDS)}")


def seed_id(seed: str) -> str:
    """'3', '03', '003', 'seed003' -> '003'."""
    digits = seed.removeprefix("seed").strip()
    if not digits.isdigit() or f"{int(digits):03d}" not in SEEDS:
        raise UnknownSeed(seed)
    return f"{int(digits):03d}"


def load(seed: str) -> SeedFindings:
    sid = seed_id(seed)
    name = f"seed{sid}.toml"
    text = resources.files(__package__).joinpath("findings", name).read_text()
    return parse(text, f"replication/findings/{name}", sid)


def load_all() -> list[SeedFindings]:
    return [load(s) for s in SEEDS]


def parse(text: str, file: str, seed: str) -> SeedFindings:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FindingsError(file, "(file)", f"not valid TOML: {e}") from None
    r = _Reader(doc, file, "")
    campaigns = tuple(r.strs("campaigns"))
    quick, full = r.str("quick"), r.str("full")
    for key, value in (("quick", quick), ("full", full)):
        if value not in campaigns:
            raise FindingsError(file, key, "must be one of 'campaigns'", value, campaigns)
    rows = doc.get("finding")
    if not isinstance(rows, list) or not rows:
        raise FindingsError(file, "finding", "at least one [[finding]] table is required")
    findings = [_finding(row, file, seed, i) for i, row in enumerate(rows)]
    ids = [f.id for f in findings]
    for i, fid in enumerate(ids):
        if fid in ids[:i]:
            raise FindingsError(file, f"finding[{i}].id", "duplicate id", fid)
    r.done({"campaigns", "quick", "full", "paper", "finding"})
    return SeedFindings(seed, r.str("paper"), campaigns, quick, full, tuple(findings))


def _finding(row: Any, file: str, seed: str, i: int) -> Finding:
    where = f"finding[{i}]"
    if not isinstance(row, dict):
        raise FindingsError(file, where, "must be a table")
    r = _Reader(row, file, where + ".")
    quantity = r.choice("quantity", QUANTITIES)
    expect = r.choice("expect", EXPECTS)
    band = r.floats("band")
    if len(band) != 2 or not 0 < band[0] <= band[1]:
        raise FindingsError(file, where + ".band", "must be [low, high], 0 < low <= high", band)
    requires = tuple(r.strs("requires", []))
    for req in requires:
        if req not in (HW_ACCEL, HOST_WEIGHT) and not (
            req.startswith(HYPERVISOR) and len(req) > len(HYPERVISOR)
        ):
            raise FindingsError(file, where + ".requires", "unknown requirement", req, REQUIREMENTS)
    common = dict(
        seed=seed,
        id=r.str("id"),
        figure=r.str("figure"),
        what=r.str("what"),
        quantity=quantity,
        expect=expect,
        paper=r.float("paper"),
        paper_text=r.str("paper_text"),
        band=(band[0], band[1]),
        analogue=r.str("analogue"),
        requires=requires,
        note=r.str("note", ""),
        platforms=tuple(r.strs("platform")),
        link=_link(r, file, where),
    )
    known = {"id", "figure", "what", "quantity", "expect", "paper", "paper_text", "band"}
    known |= {"analogue", "requires", "note", "platform", "link"}
    if quantity == SUITE_SCORE:
        finding = Finding(**common, suite=r.str("suite"), x=_side(r, "x", file, where))
        r.done(known | {"suite", "x"})
        return finding
    finding = Finding(
        **common,
        test_cases=tuple(r.strs("test_case")),
        metric=r.str("metric", ""),
        dims=_dims(r.table("dims", {}), file, where + ".dims"),
        x=_side(r, "x", file, where),
        base=_side(r, "base", file, where),
    )
    if quantity == MAX_RATIO and not finding.metric:
        raise FindingsError(file, where + ".metric", "a max-ratio names its maximum's metric")
    r.done(known | {"test_case", "metric", "dims", "x", "base"})
    return finding


def _link(r: _Reader, file: str, where: str) -> tuple[float, float] | None:
    if "link" not in r.t:
        return None
    t = _Reader(r.table("link"), file, f"{where}.link.")
    link = (t.float("size_kb"), t.float("gbit"))
    t.done({"size_kb", "gbit"})
    return link


def _side(r: _Reader, key: str, file: str, where: str) -> Side:
    t = _Reader(r.table(key), file, f"{where}.{key}.")
    side = Side(
        scenario=t.str("scenario"),
        platform=t.str("platform", "") or None,
        roles=tuple(t.strs("roles", ["target"])),
        dims=_dims(t.table("dims", {}), file, f"{where}.{key}.dims"),
    )
    t.done({"scenario", "platform", "roles", "dims"})
    return side


def _dims(table: dict[str, Any], file: str, where: str) -> tuple[tuple[str, Any], ...]:
    for k, v in table.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise FindingsError(file, f"{where}.{k}", "must be a string or a number", v)
    return tuple(sorted(table.items()))


class _Reader:
    """Typed reads of one TOML table; every bad value names its key."""

    _MISSING = object()

    def __init__(self, table: dict[str, Any], file: str, prefix: str) -> None:
        self.t, self.file, self.prefix = table, file, prefix

    def _get(self, key: str, default: Any) -> Any:
        value = self.t.get(key, default)
        if value is self._MISSING:
            raise FindingsError(self.file, self.prefix + key, "is required")
        return value

    def str(self, key: str, default: Any = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str) or (default is self._MISSING and not value.strip()):
            raise FindingsError(self.file, self.prefix + key, "must be a non-empty string", value)
        return value

    def strs(self, key: str, default: Any = _MISSING) -> list[str]:
        value = self._get(key, default)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise FindingsError(self.file, self.prefix + key, "must be a list of strings", value)
        return value

    def float(self, key: str) -> float:
        value = self._get(key, self._MISSING)
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise FindingsError(self.file, self.prefix + key, "must be a number > 0", value)
        return float(value)

    def floats(self, key: str) -> list[float]:
        value = self._get(key, self._MISSING)
        if not isinstance(value, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            raise FindingsError(self.file, self.prefix + key, "must be a list of numbers", value)
        return [float(v) for v in value]

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self._get(key, self._MISSING)
        if value not in allowed:
            raise FindingsError(self.file, self.prefix + key, "unknown value", value, allowed)
        return value

    def table(self, key: str, default: Any = _MISSING) -> dict[str, Any]:
        value = self._get(key, default)
        if not isinstance(value, dict):
            raise FindingsError(self.file, self.prefix + key, "must be a table", value)
        return value

    def done(self, known: set[str]) -> None:
        extra = sorted(set(self.t) - known)
        if extra:
            raise FindingsError(
                self.file, self.prefix + extra[0], "unknown key", None, sorted(known)
            )
