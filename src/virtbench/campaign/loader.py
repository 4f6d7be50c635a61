"""Load and validate a campaign TOML file. Every user error names file, key, value, allowed."""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from .. import parsing
from ..errors import CampaignError
from ..parsing import ParseError
from ..platforms import registry as platform_registry
from ..platforms.base import PlatformSpec
from ..platforms.options import OptionError
from ..scenarios import registry as scenario_registry
from ..scenarios.base import Scenario
from ..workloads import registry as workload_registry
from ..workloads.base import Param
from . import expand
from .model import Campaign, Settings, TestSelection

DEFAULT_CAMPAIGN = "quick"
TOP_KEYS = {"campaign", "platforms", "suites"}
CAMPAIGN_KEYS = {
    "name",
    "description",
    "repetitions",
    "warmup",
    "order",
    "seed",
    "cell_timeout",
    "baseline",
    "target_cpus",
    "client_cpus",
    "scenarios",
}


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("virtbench") / "campaigns" / f"{name}.toml"))


def builtin_names() -> list[str]:
    folder = resources.files("virtbench") / "campaigns"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def resolve(path_or_name: str | None) -> Path:
    """A path to a campaign file, or the name of a built-in campaign (default: quick)."""
    if path_or_name is None:
        return builtin_path(DEFAULT_CAMPAIGN)
    p = Path(path_or_name)
    if p.exists():
        return p
    if p.suffix == "" and builtin_path(path_or_name).exists():
        return builtin_path(path_or_name)
    raise CampaignError(
        path_or_name,
        "(file)",
        "no such campaign file or built-in campaign",
        allowed=builtin_names() + ["a path to a .toml file"],
    )


def load(path_or_name: str | None) -> Campaign:
    path = resolve(path_or_name)
    try:
        text = path.read_text()
    except OSError as exc:
        raise CampaignError(str(path), "(file)", f"cannot read: {exc}") from exc
    return parse(text, str(path))


def parse(text: str, file: str) -> Campaign:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(file, "(syntax)", f"not valid TOML: {exc}") from exc
    _no_unknown(file, "", data, TOP_KEYS)
    meta = _table(file, "campaign", data.get("campaign", {}))
    _no_unknown(file, "campaign.", meta, CAMPAIGN_KEYS)
    settings = _settings(file, meta)
    platforms = _platforms(file, data.get("platforms"))
    names = [p.name for p in platforms]
    if settings.baseline is not None and settings.baseline not in names:
        raise CampaignError(
            file,
            "campaign.baseline",
            "is not a platform of this campaign",
            settings.baseline,
            names,
        )
    if settings.baseline is None:
        settings.baseline = names[0]
    tests = _suites(file, data.get("suites"))
    scenarios = _scenarios(file, meta.get("scenarios", ["solo"]), names)
    return Campaign(
        name=_typed(file, "campaign.name", meta.get("name", Path(file).stem), str),
        file=file,
        text=text,
        description=_typed(file, "campaign.description", meta.get("description", ""), str),
        settings=settings,
        platforms=platforms,
        tests=tests,
        scenarios=scenarios,
    )


def _no_unknown(file: str, prefix: str, table: dict, allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            raise CampaignError(file, prefix + key, "unknown key", allowed=sorted(allowed))


def _table(file: str, key: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise CampaignError(file, key, "must be a table", value)
    return value


def _typed(file: str, key: str, value: Any, typ: type | tuple[type, ...]) -> Any:
    if (
        isinstance(value, bool)
        and typ is not bool
        and bool not in (typ if isinstance(typ, tuple) else (typ,))
    ):
        raise CampaignError(file, key, f"must be {_tname(typ)}", value)
    if not isinstance(value, typ):
        raise CampaignError(file, key, f"must be {_tname(typ)}", value)
    return value


def _tname(typ: type | tuple[type, ...]) -> str:
    names = {
        int: "an integer",
        float: "a number",
        str: "a string",
        bool: "true or false",
        list: "a list",
        dict: "a table",
    }
    types = typ if isinstance(typ, tuple) else (typ,)
    return " or ".join(names.get(t, t.__name__) for t in types)


def _int_range(file: str, key: str, value: Any, lo: int, hi: int) -> int:
    _typed(file, key, value, int)
    try:
        return parsing.integer(value, lo, hi)
    except ParseError:
        raise CampaignError(file, key, f"must be between {lo} and {hi}", value) from None


def _cpus(file: str, key: str, value: Any) -> list[int] | None:
    if value is None:
        return None
    available = sorted(os.sched_getaffinity(0))
    _typed(file, key, value, list)
    try:
        return parsing.cpu_list(value, available) if value else []
    except ParseError as exc:
        raise CampaignError(file, key, "not a CPU of this host", exc.value, available) from None


def _settings(file: str, meta: dict) -> Settings:
    s = Settings()
    if "repetitions" in meta:
        s.repetitions = _int_range(file, "campaign.repetitions", meta["repetitions"], 1, 1000)
    if "warmup" in meta:
        s.warmup = _int_range(file, "campaign.warmup", meta["warmup"], 0, 100)
    if "order" in meta:
        if meta["order"] not in expand.ORDERS:
            raise CampaignError(
                file, "campaign.order", "unknown order", meta["order"], expand.ORDERS
            )
        s.order = meta["order"]
    if "seed" in meta:
        s.seed = _int_range(file, "campaign.seed", meta["seed"], 0, 2**31 - 1)
    if "cell_timeout" in meta:
        _typed(file, "campaign.cell_timeout", meta["cell_timeout"], (int, float))
        if meta["cell_timeout"] <= 0:
            raise CampaignError(
                file, "campaign.cell_timeout", "must be > 0 seconds", meta["cell_timeout"]
            )
        s.cell_timeout = float(meta["cell_timeout"])
    if "baseline" in meta:
        s.baseline = _typed(file, "campaign.baseline", meta["baseline"], str)
    s.target_cpus = _cpus(file, "campaign.target_cpus", meta.get("target_cpus"))
    s.client_cpus = _cpus(file, "campaign.client_cpus", meta.get("client_cpus"))
    return s


def _platforms(file: str, entries: Any) -> list[PlatformSpec]:
    if entries is None:
        return [PlatformSpec("native", "native")]
    if not isinstance(entries, list) or not entries:
        raise CampaignError(file, "platforms", "must be a non-empty array of tables [[platforms]]")
    kinds = platform_registry.load_all()
    specs: dict[str, PlatformSpec] = {}
    pending_hosts: list[tuple[PlatformSpec, str, str]] = []
    for i, entry in enumerate(entries):
        where = f"platforms[{i}]"
        entry = dict(_table(file, where, entry))
        kind = entry.pop("type", None)
        if kind is None:
            raise CampaignError(file, f"{where}.type", "is required", allowed=sorted(kinds))
        if kind not in kinds:
            raise CampaignError(file, f"{where}.type", "unknown platform type", kind, sorted(kinds))
        name = _typed(file, f"{where}.name", entry.pop("name", kind), str)
        if name in specs:
            raise CampaignError(file, f"{where}.name", "duplicate platform name", name)
        host = entry.pop("host", None)
        schema = kinds[kind].options_schema
        for key, value in entry.items():
            if key not in schema:
                raise CampaignError(
                    file,
                    f"{where}.{key}",
                    f"unknown option for type '{kind}'",
                    allowed=sorted(schema) + ["name", "type", "host"],
                )
            _default, allowed, _help = schema[key]
            if allowed is not None and value not in allowed:
                raise CampaignError(file, f"{where}.{key}", "not allowed", value, allowed)
        spec = PlatformSpec(name, kind, entry)
        try:
            spec.parsed(kinds[kind].Options)  # once: the spec carries the typed options
        except OptionError as exc:
            allowed = exc.allowed if isinstance(exc.allowed, (list, tuple)) else [exc.allowed]
            raise CampaignError(
                file, f"{where}.{exc.key}", exc.problem, entry.get(exc.key), allowed
            ) from None
        specs[name] = spec
        if host is not None:
            pending_hosts.append((spec, f"{where}.host", host))
    for spec, key, host in pending_hosts:
        if host not in specs or host == spec.name:
            raise CampaignError(
                file,
                key,
                "must name another platform of this campaign",
                host,
                [n for n in specs if n != spec.name],
            )
        spec.host = specs[host]
    return list(specs.values())


def _suites(file: str, suites: Any) -> list[TestSelection]:
    if suites is None:
        raise CampaignError(
            file,
            "suites",
            "is required: at least one [suites.NAME] table",
            allowed=sorted(workload_registry.SUITES),
        )
    suites = _table(file, "suites", suites)
    workload_registry.load_all()
    tests: list[TestSelection] = []
    for suite, body in suites.items():
        body = dict(_table(file, f"suites.{suite}", body))
        available = workload_registry.by_suite(suite)
        if not available:
            raise CampaignError(
                file,
                f"suites.{suite}",
                "unknown suite",
                suite,
                sorted({w.suite for w in workload_registry.WORKLOADS.values()}),
            )
        names = [w.name for w in available]
        chosen = body.pop("test_cases", names)
        _typed(file, f"suites.{suite}.test_cases", chosen, list)
        for tc in chosen:
            if tc not in names:
                raise CampaignError(
                    file, f"suites.{suite}.test_cases", "unknown test case", tc, names
                )
        workloads = [w for w in available if w.name in chosen]
        known: dict[str, Param] = {}
        for w in workloads:
            known.update(w.params)
        for key, value in body.items():
            if key not in known:
                raise CampaignError(
                    file,
                    f"suites.{suite}.{key}",
                    "unknown parameter",
                    allowed=sorted(known) + ["test_cases"],
                )
            _check_param(file, f"suites.{suite}.{key}", value, known[key])
        for w in workloads:
            params = {k: p.default for k, p in w.params.items()}
            params.update({k: v for k, v in body.items() if k in w.params})
            tests.append(TestSelection(suite, w.name, params))
    if not tests:
        raise CampaignError(file, "suites", "selects no test case")
    return tests


def _check_param(file: str, key: str, value: Any, p: Param) -> None:
    if p.choices is not None:
        if value not in p.choices:
            raise CampaignError(file, key, "not allowed", value, p.choices)
        return
    expected = type(p.default)
    if expected is float:
        expected = (int, float)
    if expected is list:
        _typed(file, key, value, list)
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                raise CampaignError(file, key, "list items must be numbers or strings", v)
            _check_range(file, key, v, p)
        return
    _typed(file, key, value, expected)
    _check_range(file, key, value, p)


def _check_range(file: str, key: str, value: Any, p: Param) -> None:
    if not isinstance(value, (int, float)):
        return
    if p.min is not None and value < p.min:
        raise CampaignError(file, key, f"must be >= {p.min}", value)
    if p.max is not None and value > p.max:
        raise CampaignError(file, key, f"must be <= {p.max}", value)


def _scenarios(file: str, value: Any, platform_names: list[str] | None = None) -> list[Scenario]:
    """Each scenario string parsed once; the cells hold these objects."""
    _typed(file, "campaign.scenarios", value, list)
    if not value:
        raise CampaignError(
            file,
            "campaign.scenarios",
            "must not be empty",
            allowed=scenario_registry.describe_allowed(),
        )
    scenarios = []
    for s in value:
        _typed(file, "campaign.scenarios", s, str)
        try:
            parsed = scenario_registry.parse(s)
        except ValueError as exc:
            raise CampaignError(
                file, "campaign.scenarios", str(exc), s, scenario_registry.describe_allowed()
            ) from exc
        for ref in parsed.platform_refs() if platform_names is not None else []:
            if ref not in platform_names:
                raise CampaignError(
                    file,
                    "campaign.scenarios",
                    f"scenario '{s}' names platform '{ref}', not a platform of this campaign",
                    ref,
                    platform_names,
                )
        scenarios.append(parsed)
    return scenarios
