"""Malformed campaigns, generated from the real schemas (campaign keys, each platform type's
options, each test case's params, each scenario kind), bad encodings and special files, run
through `virtbench run FILE --results-dir DIR` as a user runs it: each must end with exactly
one error naming the file and the key, exit status 2, no traceback, no results directory."""

from __future__ import annotations

import copy
import math
import os
import random
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from virtbench import cli
from virtbench.campaign import loader, source
from virtbench.errors import CampaignError
from virtbench.parsing import control_char, printable
from virtbench.platforms import registry as platform_registry
from virtbench.runner import run as runner_run
from virtbench.scenarios import registry as scenario_registry
from virtbench.workloads import registry as workload_registry
from virtbench.workloads.base import Param

SEED = 16
NAN, INF = math.nan, math.inf

# a valid campaign: every platform type, a stacked one, one test case
BASE: dict[str, Any] = {
    "campaign": {"name": "fuzz", "repetitions": 1, "scenarios": ["solo"]},
    "platforms": [
        {"name": "native", "type": "native"},
        {"name": "ct", "type": "container"},
        {"name": "vm", "type": "vm"},
        {"name": "cvm", "type": "container", "host": "vm"},
    ],
    "suites": {"cpu": {"test_cases": ["sysbench-cpu-1t"]}},
}

# values no free-form option, campaign key or parameter accepts
JUNK = [{"a": 1}, [{}], NAN, -INF, -5, 0.5, 2**62, "9" * 30 + "T", "\x00", "\x1b[2J"]
CPU_LISTS = [[], [999], "x", "0-", "999", [-1], ["a"], [0.5], [True], {}, 0]  # "0-1,3" is good
BAD_CAMPAIGN: dict[str, list[Any]] = {
    "name": [1, [], {}, True, "a\x00b", "\u202eevil"],
    "description": [1, ["x"], "\x1b[31mred"],
    "repetitions": [0, 1001, -1, 1.5, "3", "Auto", "auto ", True, NAN, INF, [], {}],
    "warmup": [-1, 101, "1", 0.5, False],
    "warmup_scope": ["cell", "", 1, ["platform"], {}, True, "Platform"],
    "order": ["zigzag", 1, ["random"], {}],
    "seed": [-1, 2**31, "7", 1.0, 2**70],
    "cell_timeout": [0, -1, INF, NAN, -INF, "600", True, 1e300, [], {}],
    "baseline": ["nope", 1, ["native"], ""],
    "aa": ["yes", 1, [True]],
    # BASE has no order = "duet": every value is refused, naming the key
    "duet_cpus": [[[0], [0]], [[0]], [], "0", [[], [1]], [[0], [999]], *JUNK[:3]],
    "target_cpus": CPU_LISTS,
    "client_cpus": CPU_LISTS,
    "scenarios": [[], "solo", [1], [[]], [{}], [""], ["solo", 2]],
    # without repetitions = "auto" any value is refused, naming the key
    "precision_pct": [0, -1, NAN, INF, "1", True, 1.0],
    "min_repetitions": [1, 1001, 2.5, "3", 3],
    "max_repetitions": [1, 1001, 2.5, "30", 30],
    "budget_s": [0, -1, INF, NAN, "600", 600],
    "client_host": [1, "", "  ", ["h2"], {}, True],
    "client_inventory": [1, "", ["inv.ini"], True],
    "client_target_address": [1, "", [], True],
    "cpu_budget": ["Shared", "", 1, ["own"], {}, True, "shared "],
    "disturbed": ["Keep", "", 1, ["keep"], {}, True, "exclude "],
}
SCENARIO_JUNK = ["", "nan", "inf", "-1", "1e999", "abc", "0x10", "99999999999999999999"]


@dataclass
class Case:
    label: str
    key: str  # the key the error must name
    data: dict | None = None  # a campaign, dumped to TOML
    raw: bytes | None = None  # or the file's bytes
    also: str = ""  # more text the error must hold (the scenario)


# --- a small TOML writer (the venv has no tomli_w): inline tables, every string escaped ----
def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return ("-inf" if v < 0 else "inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return '"' + "".join(_char(c) for c in v) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{toml_value(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def _char(c: str) -> str:
    if c in '"\\' or control_char(c) is not None or c == "\x7f":
        return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
    return c


def dump(data: dict) -> str:
    return "".join(f"{toml_value(k)} = {toml_value(v)}\n" for k, v in data.items())


def base() -> dict:
    return copy.deepcopy(BASE)


def with_campaign(key: str, value: Any) -> dict:
    d = base()
    d["campaign"][key] = value
    return d


def with_platform(i: int, key: str, value: Any) -> dict:
    d = base()
    d["platforms"][i][key] = value
    return d


# --- the cases, from the schemas ---------------------------------------------------------
def campaign_cases() -> Iterator[Case]:
    assert set(BAD_CAMPAIGN) == loader.CAMPAIGN_KEYS, "a new campaign key needs bad values here"
    for key, values in BAD_CAMPAIGN.items():
        for v in values:
            yield Case(f"campaign.{key}={v!r}", f"campaign.{key}", with_campaign(key, v))
    yield Case("campaign.bogus", "campaign.bogus", with_campaign("bogus", 1))
    yield Case("campaign key NUL", "campaign.a\x00b", with_campaign("a\x00b", 1))
    for top, values in {
        "campaign": [1, [], "x"],
        "platforms": [{}, [], "x"],
        "suites": [[], 1],
    }.items():
        for v in values:
            yield Case(f"{top}={v!r}", top, base() | {top: v})
    yield Case("platforms=[1]", "platforms[0]", base() | {"platforms": [1]})
    yield Case("top bogus", "bogus", base() | {"bogus": {}})


def platform_cases() -> Iterator[Case]:
    kinds = platform_registry.load_all()
    for i, entry in enumerate(BASE["platforms"]):
        where = f"platforms[{i}]"
        schema = kinds[entry["type"]].options_schema
        for option, (_default, choices, _help) in schema.items():
            bad = ["nope", 1, [choices[0]], {}, True] if choices else JUNK
            for v in bad:
                label = f"{where} ({entry['type']}).{option}={v!r}"
                yield Case(label, f"{where}.{option}", with_platform(i, option, v))
        yield Case(f"{where}.bogus", f"{where}.bogus", with_platform(i, "bogus", 1))
        for v in [["native"], {"a": 1}, 1, "nope", ""]:
            yield Case(f"{where}.type={v!r}", f"{where}.type", with_platform(i, "type", v))
        for v in [1, [], "", " ", "a\x00b", "\x1b[31m", "\u202e"]:
            yield Case(f"{where}.name={v!r}", f"{where}.name", with_platform(i, "name", v))
        # a duplicate name: the error names the later of the two entries
        other = 2 if i != 2 else 1
        dup = with_platform(i, "name", BASE["platforms"][other]["name"])
        yield Case(f"{where}.name duplicate", f"platforms[{max(i, other)}].name", dup)
        no_type = base()
        del no_type["platforms"][i]["type"]
        yield Case(f"{where} without type", f"{where}.type", no_type)
    # hosts: wrong type, unknown, itself, a type that cannot host or be hosted, nesting, cycle
    for i, host in [(3, 1), (3, ["vm"]), (3, "nope"), (3, "cvm"), (3, "native"), (3, "ct")]:
        yield Case(f"cvm.host={host!r}", f"platforms[{i}].host", with_platform(i, "host", host))
    for i, host in [(0, "vm"), (2, "native"), (2, "vm"), (1, "cvm")]:
        yield Case(f"[{i}].host={host!r}", f"platforms[{i}].host", with_platform(i, "host", host))
    cycle = with_platform(1, "host", "cvm")
    cycle["platforms"][3]["host"] = "ct"
    yield Case("host cycle", "platforms[1].host", cycle)


def bad_param_values(p: Param) -> list[Any]:
    if p.choices is not None:
        return ["nope", 1, [p.choices[0]], {}]
    if isinstance(p.default, bool):
        return [1, "true", []]
    if isinstance(p.default, list):
        lo, hi = p.min or 0, p.max or 0
        return [[], "1", [True], ["abc"], [lo - 1], [hi + 1], [1.5], [{}], [[1]], [NAN]]
    bad: list[Any] = [p.max + 1, NAN, INF, "1", True, [], {}]
    if p.min is not None:
        bad.append(p.min - 1)
    if isinstance(p.default, int):
        bad.append(1.5)
    return bad


def suite_cases() -> Iterator[Case]:
    workload_registry.load_all()
    for w in workload_registry.WORKLOADS.values():
        for name, p in w.params.items():
            numeric = isinstance(p.default, (int, float)) and not isinstance(p.default, bool)
            assert p.max is not None or not numeric, f"{w.name}.{name} has no maximum"
            for v in bad_param_values(p):
                d = base() | {"suites": {w.suite: {"test_cases": [w.name], name: v}}}
                yield Case(f"{w.name}.{name}={v!r}", f"suites.{w.suite}.{name}", d)
    for suite in sorted({w.suite for w in workload_registry.WORKLOADS.values()}):
        key = f"suites.{suite}"
        for body, bad_key in [
            ({"bogus": 1}, f"{key}.bogus"),
            ({"test_cases": ["nope"]}, f"{key}.test_cases"),
            ({"test_cases": "x"}, f"{key}.test_cases"),
            ({"test_cases": []}, f"{key}.test_cases"),
            ({"test_cases": [1]}, f"{key}.test_cases"),
            ({"test_cases": [{}]}, f"{key}.test_cases"),
        ]:
            yield Case(f"{key}={body!r}", bad_key, base() | {"suites": {suite: body}})
        yield Case(f"{key}=1", key, base() | {"suites": {suite: 1}})
    yield Case("suites.gpu", "suites.gpu", base() | {"suites": {"gpu": {}}})
    yield Case("suites={}", "suites", base() | {"suites": {}})


def _first_args(usage: str) -> list[str]:
    """Valid required arguments of a scenario, from its usage (`weights:A:B:C[:...]`)."""
    required = usage.split("[", 1)[0].split(":")[1:]
    out = []
    for arg in required:
        choice = re.fullmatch(r"<([^|>]+).*>", arg)
        out.append(choice[1] if choice else "native" if arg == "PLATFORM" else "1")
    return out


def scenario_cases() -> Iterator[Case]:
    texts = ["meteor", "", ":", "solo:", "solo:1", "solo:x=1", "SOLO"]
    for kind, cls in scenario_registry.load_all().items():
        first = _first_args(cls.usage)
        texts.append(":".join([kind, *first, *["zz"] * 6]))
        texts.append(":".join([kind, *first, "bogus=1"]))
        for i in range(len(first)):
            texts += [":".join([kind, *first[:i], junk]) for junk in SCENARIO_JUNK]
        for option in re.findall(r"(\w+)=", cls.usage):
            texts += [":".join([kind, *first, f"{option}={j}"]) for j in SCENARIO_JUNK]
            texts.append(":".join([kind, *first, f"{option}=1", f"{option}=1"]))
    for text in dict.fromkeys(texts):
        data = with_campaign("scenarios", ["solo", text])
        yield Case(f"scenario {text!r}", "campaign.scenarios", data, also=printable(text))


def encoding_cases() -> Iterator[Case]:
    good = dump(base()).encode()
    yield Case("latin-1 string", "(encoding)", raw=b'campaign = {name = "caf\xe9"}\n')
    yield Case("latin-1 comment", "(encoding)", raw=good + b"# caf\xe9\n")
    yield Case("utf-16", "(encoding)", raw=dump(base()).encode("utf-16"))
    yield Case("lone surrogate", "(encoding)", raw=good + b"# \xed\xa0\x80\n")
    yield Case("raw NUL", "(syntax)", raw=good + b"x = 1\x00\n")
    yield Case("raw ESC in a string", "(syntax)", raw=good + b'x = "\x1b[2J"\n')
    yield Case("deep array", "(syntax)", raw=b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n")
    yield Case("deep table", "(syntax)", raw=b"x = " + b"{a=" * 1500 + b"}" * 1500 + b"\n")
    yield Case("5000-digit integer", "(syntax)", raw=good + b"x = " + b"9" * 5000 + b"\n")
    yield Case("dotted key 6000 deep", "(file)", raw=b"a." * 6000 + b"b = 1\n")
    yield Case("2 MiB", "(file)", raw=good + (b"#" * 1023 + b"\n") * 2048)
    yield Case("a PNG", "(encoding)", raw=b"\x89PNG\r\n\x1a\n")
    yield Case("not TOML", "(syntax)", raw=b"<campaign name='x'/>\n")
    yield Case("empty", "suites", raw=b"")


def random_cases(n: int = 150) -> Iterator[Case]:
    """Random junk at a random place of the valid campaign (seeded): it must be either
    accepted or refused with the key of that place (or one inside it)."""
    rng = random.Random(SEED)
    values = [*JUNK, "", "x", 0, 1, 10**9, 1e300, True, [], ["solo"], {"type": "vm"}]
    for _ in range(n):
        d = base()
        path, parent = [], d
        while True:
            keys = list(range(len(parent))) if isinstance(parent, list) else list(parent)
            k = rng.choice(keys)
            path.append(k)
            if not isinstance(parent[k], (dict, list)) or rng.random() < 0.3:
                break
            parent = parent[k]
        parent[k] = rng.choice(values)
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        yield Case(f"random {key}={parent[k]!r}", key.split("[", 1)[0], d)


# --- running one case as a user does -----------------------------------------------------
class Accepted(Exception):
    """The loader accepted the campaign: the runner would have started."""


@pytest.fixture
def run_cli(tmp_path, monkeypatch, capsys):
    def refuse_to_run(*_a, **_k):
        raise Accepted

    monkeypatch.setattr(runner_run, "Runner", refuse_to_run)

    def run(case: Case, n: int) -> str | None:
        """None if the case ends as it must, else what went wrong."""
        path = tmp_path / f"case{n}.toml"
        path.write_bytes(case.raw if case.raw is not None else dump(case.data).encode())
        results = tmp_path / f"results{n}"
        monkeypatch.setattr(
            sys, "argv", ["virtbench", "run", str(path), "--results-dir", str(results)]
        )
        try:
            cli.main()
            code: Any = 0
        except SystemExit as exc:
            code = exc.code
        except Accepted:
            return "accepted"
        except BaseException as exc:  # a traceback for the user
            return f"{type(exc).__name__}: {exc}"
        out, err = capsys.readouterr()
        return _judge(case, str(path), code, out, err, results)

    return run


def _judge(case: Case, file: str, code: Any, out: str, err: str, results: Path) -> str | None:
    lines = [line for line in err.splitlines() if line.strip()]
    if code != 2:
        return f"exit status {code!r}: {err!r}"
    if "Traceback" in err or out.strip():
        return f"traceback or output: {out!r} {err!r}"
    if len(lines) != 1 or not lines[0].startswith("error: "):
        return f"not exactly one error line: {err!r}"
    msg = lines[0]
    names_key = msg.startswith(f"error: {file}: key '{printable(case.key)}'")
    # random junk may be refused at a key inside the one replaced (platforms[2].type)
    if not names_key and not (case.label.startswith("random") and f"key '{case.key}" in msg):
        return f"does not name the key {case.key!r}: {msg!r}"
    if case.also and case.also not in msg:
        return f"does not name {case.also!r}: {msg!r}"
    if control_char(msg) is not None:
        return f"control character printed raw: {msg!r}"
    if results.exists():
        return "created the results directory"
    return None


def _check_all(run_cli, cases: list[Case], accepted_ok: bool = False) -> None:
    failures = []
    for n, case in enumerate(cases):
        problem = run_cli(case, n)
        if problem == "accepted" and accepted_ok:
            continue
        if problem:
            failures.append(f"{case.label}: {problem}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures)


def test_base_campaign_is_valid():
    campaign = loader.parse(dump(base()), "base.toml")
    assert [p.name for p in campaign.platforms] == ["native", "ct", "vm", "cvm"]


def test_bad_campaign_keys(run_cli):
    _check_all(run_cli, list(campaign_cases()))


def test_bad_platforms(run_cli):
    _check_all(run_cli, list(platform_cases()))


def test_bad_suites_and_params(run_cli):
    cases = list(suite_cases())
    assert len(cases) > 300
    _check_all(run_cli, cases)


def test_bad_scenarios(run_cli):
    _check_all(run_cli, list(scenario_cases()))


def test_bad_encodings(run_cli):
    _check_all(run_cli, list(encoding_cases()))


def test_random_junk(run_cli):
    _check_all(run_cli, list(random_cases()), accepted_ok=True)


# --- special files, through the real entry point in a subprocess (a hang fails, not blocks) -
def special_files(tmp: Path) -> Iterator[tuple[str, str]]:
    fifo = tmp / "fifo.toml"
    os.mkfifo(fifo)
    yield "a FIFO", str(fifo)
    link = tmp / "link.toml"
    link.symlink_to(fifo)
    yield "a symlink to a FIFO", str(link)
    (tmp / "dir.toml").mkdir()
    yield "a directory", str(tmp / "dir.toml")
    yield "/dev/zero", "/dev/zero"
    yield "/dev/null", "/dev/null"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp / "sock.toml"))
    yield "a socket", str(tmp / "sock.toml")
    sock.close()
    sparse = tmp / "sparse.toml"
    with sparse.open("wb") as f:
        f.truncate(50 << 20)  # 50 MB without writing them
    yield "a 50 MB file", str(sparse)
    yield "no such file", str(tmp / "missing.toml")


def test_special_files_refused_through_the_entry_point(tmp_path):
    failures = []
    for n, (label, path) in enumerate(special_files(tmp_path)):
        results = tmp_path / f"results{n}"
        argv = ["run", path, "--results-dir", str(results)]
        try:
            p = subprocess.run(
                [sys.executable, "-c", "from virtbench.cli import main; main()", *argv],
                capture_output=True,
                text=True,
                timeout=30,
                env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)},
            )
        except subprocess.TimeoutExpired:
            failures.append(f"{label}: hangs")
            continue
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        ok = (
            p.returncode == 2
            and len(lines) == 1
            and lines[0].startswith(f"error: {path}: key '(file)'")
            and not p.stdout.strip()
            and not results.exists()
        )
        if not ok:
            failures.append(f"{label}: exit {p.returncode}: {p.stdout!r} {p.stderr!r}")
    assert not failures, "\n".join(failures)


def test_campaign_size_cap_names_file_size_and_cap(tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(dump(base()).encode() + b"#" * source.MAX_BYTES)
    with pytest.raises(loader.CampaignError) as err:
        loader.load(str(big))
    msg = str(err.value)
    assert str(big) in msg and str(big.stat().st_size) in msg and "1 MiB" in msg


def test_a_sweep_whose_first_rate_is_above_its_last_is_refused():
    text = """
[campaign]
name = "x"
[[platforms]]
name = "native"
type = "native"
[suites.web]
test_cases = ["httperf-sweep"]
start_fraction = 1.2
max_fraction = 1.0
"""
    with pytest.raises(
        CampaignError, match=r"suites\.web\.start_fraction.*must be <= max_fraction"
    ):
        loader.parse(text, "c.toml")
