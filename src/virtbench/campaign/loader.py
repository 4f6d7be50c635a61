"""Load and validate a campaign TOML file. Every user error names file, key, value, allowed."""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from .. import cpubudget, parsing
from ..errors import CampaignError
from ..naming import aa_twin
from ..parsing import ParseError
from ..platforms import registry as platform_registry
from ..platforms.base import PlatformSpec
from ..platforms.options import OptionError
from ..scenarios import registry as scenario_registry
from ..scenarios.base import Scenario
from ..suites import SUITES as KNOWN_SUITES
from ..workloads import registry as workload_registry
from ..workloads.base import Param
from . import duet, expand, source
from .model import (
    ADAPTIVE_KEYS,
    CLIENT_KEYS,
    DISTURBED_POLICIES,
    WARMUP_SCOPES,
    Adaptive,
    Campaign,
    Settings,
    TestSelection,
)

DEFAULT_CAMPAIGN = "quick"
MAX_CELL_TIMEOUT = 7 * 24 * 3600
MIN_CELL_TIMEOUT = 1  # second: no cell provisions, starts and measures in less
TOP_KEYS = {"campaign", "platforms", "suites"}
CAMPAIGN_KEYS = {
    "name",
    "description",
    "repetitions",
    "warmup",
    "warmup_scope",
    "order",
    "seed",
    "cell_timeout",
    "baseline",
    "target_cpus",
    "duet_cpus",
    "client_cpus",
    "scenarios",
    "cpu_budget",
    "aa",
    "disturbed",
    *ADAPTIVE_KEYS,
    *CLIENT_KEYS,
}
DISTURBED_ENV = "VIRTBENCH_DISTURBED"  # `disturbed` where a campaign does not set it
AUTO = "auto"  # repetitions = "auto": adaptive repetitions (docs/ARCHITECTURE.md)
MAX_REPETITIONS = 1000


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("virtbench") / "campaigns" / f"{name}.toml"))


def builtin_names() -> list[str]:
    folder = resources.files("virtbench") / "campaigns"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def summary(path: Path) -> str:
    """The first line of a campaign file's description ("" when it has none or is not a
    readable campaign): what `list campaigns` shows, without loading the whole campaign."""
    try:
        meta = tomllib.loads(path.read_text()).get("campaign", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    text = meta.get("description", "") if isinstance(meta, dict) else ""
    return text.strip().splitlines()[0] if isinstance(text, str) and text.strip() else ""


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
    return parse(source.read(path), str(path))


def parse(text: str, file: str) -> Campaign:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(file, "(syntax)", f"not valid TOML: {exc}") from exc
    except RecursionError:
        raise CampaignError(file, "(syntax)", "not valid TOML: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise CampaignError(file, "(syntax)", f"not valid TOML: {exc}") from None
    _no_control_chars(file, data)
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
    if settings.aa:
        _add_aa_twin(file, platforms, settings.baseline)
    tests = _suites(file, data.get("suites"))
    platform_suites = _platform_suites(file, data.get("platforms") or [], tests)
    if settings.aa and settings.baseline in platform_suites:
        platform_suites[aa_twin(settings.baseline)] = platform_suites[settings.baseline]
    scenarios = _scenarios(file, meta.get("scenarios", ["solo"]), names)
    _no_idle_platforms(file, platforms, platform_suites, scenarios)
    name = _typed(file, "campaign.name", meta.get("name", Path(file).stem), str)
    if not name.strip():  # as a platform's: a run must be told apart in listings and reports
        raise CampaignError(file, "campaign.name", "must not be empty or blank", name)
    campaign = Campaign(
        name=name,
        file=file,
        text=text,
        description=_typed(file, "campaign.description", meta.get("description", ""), str),
        settings=settings,
        platforms=platforms,
        tests=tests,
        scenarios=scenarios,
        platform_suites=platform_suites,
    )
    duet.check(campaign, meta.get("duet_cpus"), lambda key, v: _cpus(file, key, v))
    return campaign


def _platform_suites(
    file: str, entries: list[dict], tests: list[TestSelection]
) -> dict[str, frozenset[str]]:
    """A platform's optional `suites`: the only suites of the campaign it runs; [] runs
    none: the platform is only a host or a neighbour (re-measuring one platform's cells
    beside the same neighbours, as a campaign measured in pieces needs)."""
    selected = list(dict.fromkeys(t.suite for t in tests))
    out: dict[str, frozenset[str]] = {}
    for i, entry in enumerate(entries):
        if "suites" not in entry:
            continue
        key = f"platforms[{i}].suites"
        only = entry["suites"]
        if not isinstance(only, list) or not all(isinstance(s, str) for s in only):
            raise CampaignError(file, key, "must be a list of suite names", only, selected)
        for s in only:
            if s not in selected:
                raise CampaignError(file, key, "is not a suite of this campaign", s, selected)
        out[entry.get("name", entry.get("type"))] = frozenset(only)
    return out


def _no_idle_platforms(
    file: str,
    platforms: list[PlatformSpec],
    only: dict[str, frozenset[str]],
    scenarios: list[Scenario],
) -> None:
    """A platform with `suites = []` must serve as another's host or a scenario's neighbour
    (else it is a typo), and some platform must run cells."""
    names = [p.name for p in platforms]
    idle = [n for n in names if only.get(n) == frozenset()]
    if len(idle) == len(names):
        raise CampaignError(
            file, "platforms[*].suites", "every platform has suites = []: nothing to run"
        )
    used = {p.host.name for p in platforms if p.host is not None}
    used |= {ref for s in scenarios for ref in s.platform_refs()}
    for name in idle:
        if name not in used:
            i = names.index(name)
            raise CampaignError(
                file,
                f"platforms[{i}].suites",
                f"is [] but platform '{name}' is no platform's host and no scenario's"
                " neighbour: it would never run",
                "[]",
                sorted(used),
            )


def _no_control_chars(file: str, data: dict) -> None:
    """Refuse a control character (NUL, ESC, a bidi override...) in any key or string: names
    and scenarios are printed on terminals and in reports. The description may have lines."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:  # not recursive: a table may be nested thousands deep
        key, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                path = f"{key}.{k}" if key else k
                if parsing.control_char(k) is not None:
                    raise CampaignError(file, path, "the key has a control character", k)
                stack.append((path, v))
        elif isinstance(value, list):
            # a table in an array has its index in the key (platforms[2].name); a scalar
            # has the array's key (campaign.scenarios)
            stack.extend(
                (f"{key}[{i}]" if isinstance(v, (dict, list)) else key, v)
                for i, v in enumerate(value)
            )
        elif isinstance(value, str):
            allow = "\n\t" if key == "campaign.description" else ""
            if parsing.control_char(value, allow) is not None:
                raise CampaignError(file, key, "has a control character", value)


def _no_unknown(file: str, prefix: str, table: dict, allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            raise CampaignError(file, prefix + key, "unknown key", allowed=sorted(allowed))


def _table(file: str, key: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise CampaignError(file, key, "must be a table", value)
    return value


def _typed(file: str, key: str, value: Any, typ: type | tuple[type, ...]) -> Any:
    if not _is(value, typ):
        raise CampaignError(file, key, f"must be {_tname(typ)}", value)
    return value


def _is(value: Any, typ: type | tuple[type, ...]) -> bool:
    """isinstance, except that true/false is not a number"""
    if isinstance(value, bool) and bool not in (typ if isinstance(typ, tuple) else (typ,)):
        return False
    return isinstance(value, typ)


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


def _cpus(file: str, key: str, value: Any, here: bool = True) -> list[int] | None:
    """CPU numbers as [0, 1] or '0-1,3'; `here`: each one of this host's (not for the CPUs of a
    client host, which pins its clients there)."""
    if value is None:
        return None
    _typed(file, key, value, (list, str))
    if not value:
        raise CampaignError(
            file, key, "must name at least one CPU (leave the key out: not pinned)", value
        )
    available = sorted(os.sched_getaffinity(0)) if here else None
    try:
        return parsing.cpu_list(value, available)
    except ParseError as exc:
        raise CampaignError(
            file, key, exc.problem.removeprefix("is "), exc.value, [exc.allowed]
        ) from None


def _number(file: str, key: str, value: Any, hi: float, what: str, lo: float = 0) -> float:
    """A finite number > 0 (at least `lo` if given) and at most `hi` (`what` says the range
    in words)."""
    _typed(file, key, value, (int, float))
    try:
        got = parsing.number(value, 0, hi, above=True)
    except ParseError:
        got = None
    if got is None or got < lo:
        least = f"at least {lo}" if lo else "> 0"
        raise CampaignError(file, key, f"must be {least} and at most {what}", value) from None
    return got


def _adaptive(file: str, meta: dict) -> Adaptive | None:
    """The adaptive plan of `repetitions = "auto"`; its keys mean nothing without it."""
    given = [k for k in ADAPTIVE_KEYS if k in meta]
    if meta.get("repetitions") != AUTO:
        if given:
            raise CampaignError(
                file,
                f"campaign.{given[0]}",
                'applies only with repetitions = "auto" (adaptive repetitions)',
                meta[given[0]],
            )
        return None
    a = Adaptive()
    precision = a.precision_pct
    if "precision_pct" in meta:
        precision = _number(file, "campaign.precision_pct", meta["precision_pct"], 100, "100 (%)")
    lo = a.min_repetitions
    if "min_repetitions" in meta:
        lo = _int_range(file, "campaign.min_repetitions", meta["min_repetitions"], 2, 1000)
    hi = max(a.max_repetitions, lo)
    if "max_repetitions" in meta:
        hi = _int_range(file, "campaign.max_repetitions", meta["max_repetitions"], 2, 1000)
        if hi < lo:
            raise CampaignError(
                file, "campaign.max_repetitions", f"must be >= min_repetitions ({lo})", hi
            )
    budget = a.budget_s
    if "budget_s" in meta:
        budget = _number(
            file, "campaign.budget_s", meta["budget_s"], MAX_CELL_TIMEOUT, "7 days in seconds"
        )
    return Adaptive(precision, lo, hi, budget)


def _settings(file: str, meta: dict) -> Settings:
    s = Settings()
    s.adaptive = _adaptive(file, meta)
    if s.adaptive is not None:
        s.repetitions = s.adaptive.min_repetitions
    elif "repetitions" in meta:
        value = meta["repetitions"]
        if isinstance(value, str) and value != AUTO:
            raise CampaignError(
                file,
                "campaign.repetitions",
                f'must be an integer (1..{MAX_REPETITIONS}) or "{AUTO}"',
                value,
            )
        s.repetitions = _int_range(file, "campaign.repetitions", value, 1, MAX_REPETITIONS)
    if "warmup" in meta:
        s.warmup = _int_range(file, "campaign.warmup", meta["warmup"], 0, 100)
    if "warmup_scope" in meta:
        if meta["warmup_scope"] not in WARMUP_SCOPES:
            raise CampaignError(
                file, "campaign.warmup_scope", "unknown scope", meta["warmup_scope"], WARMUP_SCOPES
            )
        s.warmup_scope = meta["warmup_scope"]
    if "order" in meta:
        if meta["order"] not in expand.ORDERS:
            raise CampaignError(
                file, "campaign.order", "unknown order", meta["order"], expand.ORDERS
            )
        s.order = meta["order"]
    if "seed" in meta:
        s.seed = _int_range(file, "campaign.seed", meta["seed"], 0, 2**31 - 1)
    if "cell_timeout" in meta:
        # finite: inf overflows the runner's timers, nan times every cell out at once
        s.cell_timeout = _number(
            file,
            "campaign.cell_timeout",
            meta["cell_timeout"],
            MAX_CELL_TIMEOUT,
            f"{MAX_CELL_TIMEOUT} seconds (7 days)",
            lo=MIN_CELL_TIMEOUT,  # 1e-320 s is > 0, yet times every cell out before it starts
        )
    if "baseline" in meta:
        s.baseline = _typed(file, "campaign.baseline", meta["baseline"], str)
    if "aa" in meta:
        s.aa = _typed(file, "campaign.aa", meta["aa"], bool)
    if "cpu_budget" in meta:
        if meta["cpu_budget"] not in cpubudget.MODES:
            raise CampaignError(
                file,
                "campaign.cpu_budget",
                "unknown CPU budget mode (shared: a cell's environments divide the target's "
                "cpu_quota_us, like tenants of one host; own: each keeps its own quota)",
                meta["cpu_budget"],
                cpubudget.MODES,
            )
        s.cpu_budget = meta["cpu_budget"]
    # the host's default where a campaign does not say (a lab that knows it is shared, the
    # integration tests, which check mechanics and not noise)
    where, policy = "campaign.disturbed", meta.get("disturbed")
    if policy is None and os.environ.get(DISTURBED_ENV):
        where, policy = f"${DISTURBED_ENV}", os.environ[DISTURBED_ENV]
    if policy is not None:
        if policy not in DISTURBED_POLICIES:
            raise CampaignError(
                file,
                where,
                "unknown policy for cells another tenant disturbed (exclude: their samples are"
                " invalid, kept and shown; keep: labelled only)",
                policy,
                DISTURBED_POLICIES,
            )
        s.disturbed = policy
    s.target_cpus = _cpus(file, "campaign.target_cpus", meta.get("target_cpus"))
    # with a client host they are that host's CPUs (serving/remote.py pins its clients there)
    s.client_cpus = _cpus(
        file, "campaign.client_cpus", meta.get("client_cpus"), here="client_host" not in meta
    )
    for key in CLIENT_KEYS:  # a client host of an Ansible inventory (serving/remote.py)
        if key in meta:
            value = _typed(file, f"campaign.{key}", meta[key], str)
            if not value.strip():
                raise CampaignError(file, f"campaign.{key}", "must not be empty", value)
            setattr(s, key, value)
    return s


def aa_only(campaign: Campaign, repetitions: int) -> Campaign:
    """The campaign's baseline alone, twice (`aa = true`), interleaved: what `virtbench
    calibrate --aa` measures."""
    base = campaign.settings.baseline
    assert base is not None  # parse() always sets one
    spec = next(p for p in campaign.platforms if p.name == base)
    platforms = [spec]
    _add_aa_twin(campaign.file, platforms, base)
    settings = dataclasses.replace(
        campaign.settings, aa=True, order="interleaved", repetitions=repetitions, adaptive=None
    )
    suites = {name: kept for name, kept in campaign.platform_suites.items() if name == base}
    if base in suites:
        suites[aa_twin(base)] = suites[base]
    return dataclasses.replace(
        campaign,
        name=f"{campaign.name}-aa",
        settings=settings,
        platforms=platforms,
        platform_suites=suites,
    )


def _add_aa_twin(file: str, platforms: list[PlatformSpec], baseline: str) -> None:
    """`aa = true`: the baseline again, under its A/A name, measured in the same rounds."""
    twin = aa_twin(baseline)
    if any(p.name == twin for p in platforms):
        raise CampaignError(
            file, "campaign.aa", f"a platform is already named {twin}, the A/A copy's name", True
        )
    spec = next(p for p in platforms if p.name == baseline)
    at = platforms.index(spec) + 1
    platforms.insert(at, PlatformSpec(twin, spec.type, dict(spec.options), spec.host))


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
        if not isinstance(kind, str) or kind not in kinds:
            raise CampaignError(file, f"{where}.type", "unknown platform type", kind, sorted(kinds))
        name = _typed(file, f"{where}.name", entry.pop("name", kind), str)
        if not name.strip():
            raise CampaignError(file, f"{where}.name", "must not be empty", name)
        if name in specs:
            raise CampaignError(file, f"{where}.name", "duplicate platform name", name)
        host = entry.pop("host", None)
        if host is not None:
            _typed(file, f"{where}.host", host, str)
        entry.pop("suites", None)  # read by _platform_suites, once the suites are known
        schema = kinds[kind].options_schema
        for key, value in entry.items():
            if key not in schema:
                raise CampaignError(
                    file,
                    f"{where}.{key}",
                    f"unknown option for type '{kind}'",
                    allowed=sorted(schema) + ["name", "type", "host", "suites"],
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
    _stack(file, specs, pending_hosts)
    return list(specs.values())


def _stack(file: str, specs: dict[str, PlatformSpec], pending: list[tuple[Any, str, str]]) -> None:
    """Set each `host`: another platform of a type this one can run inside (a container in a
    vm), itself on the bare host, so no cycle or nesting the platforms cannot provision."""
    stacked = {spec.name for spec, _key, _host in pending}
    for spec, key, host in pending:
        if host not in specs or host == spec.name:
            raise CampaignError(
                file,
                key,
                "must name another platform of this campaign",
                host,
                [n for n in specs if n != spec.name],
            )
        runs_in = getattr(platform_registry.STACKED.get(spec.type), "runs_in", ())
        if not runs_in:
            can = sorted(platform_registry.STACKED)
            raise CampaignError(
                file,
                key,
                f"a '{spec.type}' platform cannot run inside another platform "
                f"(only {', '.join(can)} can)",
                host,
            )
        if specs[host].type not in runs_in or host in stacked:
            nested = " inside another platform" if host in stacked else ""
            raise CampaignError(
                file,
                key,
                f"a '{spec.type}' platform runs only inside a {' or '.join(runs_in)} platform "
                f"on the bare host; '{host}' is a '{specs[host].type}'{nested}",
                host,
                [n for n, s in specs.items() if s.type in runs_in and n not in stacked] or None,
            )
        spec.host = specs[host]


def _suites(file: str, suites: Any) -> list[TestSelection]:
    if suites is None:
        raise CampaignError(
            file,
            "suites",
            "is required: at least one [suites.NAME] table",
            allowed=sorted(KNOWN_SUITES),
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
        if not chosen:
            raise CampaignError(
                file,
                f"suites.{suite}.test_cases",
                "must not be empty (leave it out: all)",
                chosen,
                names,
            )
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
            for low, high in w.param_order:
                if params[low] > params[high]:
                    raise CampaignError(
                        file, f"suites.{suite}.{low}", f"must be <= {high} ({params[high]})",
                        params[low],
                    )  # fmt: skip
            tests.append(TestSelection(suite, w.name, params))
    if not tests:
        raise CampaignError(file, "suites", "selects no test case")
    return tests


def _check_param(file: str, key: str, value: Any, p: Param) -> None:
    if p.choices is not None:
        if value not in p.choices:
            raise CampaignError(file, key, "not allowed", value, p.choices)
        return
    if isinstance(p.default, list):
        # a sweep: a non-empty list of values of the type of the default's items
        _typed(file, key, value, list)
        if not value:
            raise CampaignError(file, key, "must not be empty", value)
        item = _param_type(p.default[0]) if p.default else (int, float, str)
        for v in value:
            if not _is(v, item):
                raise CampaignError(file, key, f"list items must be {_tname(item)}", v)
            _check_range(file, key, v, p)
        return
    _typed(file, key, value, _param_type(p.default))
    _check_range(file, key, value, p)


def _param_type(default: Any) -> type | tuple[type, ...]:
    return (int, float) if isinstance(default, float) else type(default)


def _check_range(file: str, key: str, value: Any, p: Param) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise CampaignError(file, key, "must be a finite number", value)
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
