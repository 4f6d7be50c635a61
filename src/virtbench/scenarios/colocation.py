"""Co-location scenarios of seeds 000 and 003, usable from campaign files.

    idle-neighbours:K[:PLATFORM]     K idle environments beside the target (seed 003 Table 2)
    identical[:load=PCT]             a second environment, same platform, same workload
    heterogeneous:PLATFORM[:load=PCT]  a neighbour on another platform, same workload
    different:SIZE_KB[:load=PCT]     the neighbour serves SIZE_KB files, the target its own
    many:N[:load=PCT]                N environments in all, each at load PCT (default 10)
    weights:A:B:C[:load=PCT][:cpu=N][:clients=other|all]
                                     CPU weights host back end : target : neighbour, all
                                     environments on one shared CPU (colocation_placement.py)
    startup:K[:PLATFORM[:DELAY_S]][:load=PCT]
                                     K newcomers start DELAY_S after the target's load began;
                                     load=PCT: the target at a fixed rate (seed 003 Fig. 14)

PLATFORM names a [[platforms]] entry of the campaign (default: the target's own).
load=PCT sets each environment's offered rate to PCT % of its solo peak (the workload's
`OfferedRate.rate_param`, rates.py), for rate sweeps in 10 % steps. The engine is
colocation_engine.py; neighbour environments come from neighbours.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from .. import labelkeys, parsing
from ..parsing import ParseError
from ..platforms.base import PlatformSpec
from ..workloads.base import Sample
from . import colocation_engine as engine
from . import rates
from .base import Scenario, ScenarioEnv
from .colocation_placement import CLIENTS, SharedCpu, backlog_connections, shared_cpu
from .placement import parse_cpu
from .registry import register

MAX_NEIGHBOURS = 16
BASE_SHARES = 1024  # weight 1 = the cgroup v1 default cpu.shares
T = TypeVar("T")


def _arg(kind: str, name: str, text: str, parse: Callable[[str], T], allowed: str) -> T:
    """One argument of a scenario string; a bad one names the scenario and what is allowed."""
    try:
        return parse(text)
    except ParseError:
        raise ValueError(f"scenario '{kind}': {name} must be {allowed}, got {text!r}") from None


def _int_arg(kind: str, name: str, text: str, lo: int, hi: int) -> int:
    return _arg(
        kind, name, text, lambda t: parsing.integer(t, lo, hi, text=True), f"an integer {lo}..{hi}"
    )


def _split_options(kind: str, args: list[str], allowed: tuple[str, ...]) -> tuple[list, dict]:
    """Positional args, then trailing key=value options (only `allowed` keys)."""
    try:
        return parsing.key_values(args, allowed, options_last=True)
    except ParseError as exc:
        raise ValueError(f"scenario '{kind}': {exc}") from None


def _load(kind: str, opts: dict[str, str], default: float | None = None) -> float | None:
    if "load" not in opts:
        return default
    return _arg(
        kind,
        "load",
        opts["load"],
        lambda t: parsing.number(t, 1, 200),
        "a percentage of the solo peak (1..200)",
    )


class _Colocation(Scenario):
    """Shared parsing and platform lookup; subclasses build the environment plans."""

    options: tuple[str, ...] = ("load",)
    shares_cpu_budget = True  # the cell's environments divide the target's CPU budget

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.pos, opts = _split_options(self.kind, args, self.options)
        self.opts = opts
        self.load = _load(self.kind, opts)
        self.platform_ref: str | None = None
        self.parse(self.pos)

    def parse(self, pos: list[str]) -> None:
        if pos:
            raise ValueError(f"scenario '{self.kind}' takes no positional arguments ({self.usage})")

    def platform_refs(self) -> list[str]:
        return [self.platform_ref] if self.platform_ref else []

    def neighbour_spec(self, env: ScenarioEnv) -> PlatformSpec:
        if self.platform_ref is None:
            return env.target.spec
        specs = env.platforms
        if self.platform_ref not in specs:
            from ..errors import VirtbenchError

            raise VirtbenchError(
                f"scenario '{self.text()}': no platform '{self.platform_ref}' in the campaign; "
                f"allowed: {', '.join(sorted(specs)) or 'none'}"
            )
        return specs[self.platform_ref]

    def plans(self, env: ScenarioEnv) -> list[engine.EnvPlan]:
        raise NotImplementedError

    def labels(self, env: ScenarioEnv) -> dict[str, Any]:
        return {"scenario_kind": self.kind}

    def placement(self, env: ScenarioEnv, plans: list[engine.EnvPlan]) -> SharedCpu | None:
        """Where the environments run; None: where the scheduler puts them."""
        return None

    def run(self, env: ScenarioEnv) -> list[Sample]:
        if self.load is not None:  # before anything is provisioned or measured
            rates.require_rate(type(env.workload), f"scenario '{self.text()}': load=PCT")
        plans = self.plans(env)
        lab = self.labels(env) | {
            "environments": {p.role: (p.spec or env.target.spec).name for p in plans}
        }
        return engine.run(
            env,
            plans,
            self.text(),
            lab,
            getattr(self, "host_shares", None),
            self.placement(env, plans),
        )


@register
class IdleNeighbours(_Colocation):
    kind = "idle-neighbours"
    usage = "idle-neighbours:K[:PLATFORM]"
    description = "K idle environments (default: the target's platform) beside the target"
    options = ()
    delay: float | None = None  # None: idle from the start; Startup sets seconds

    def parse(self, pos):
        if not 1 <= len(pos) <= 2:
            raise ValueError(f"scenario '{self.kind}': usage {self.usage}")
        self.k = _int_arg(self.kind, "K", pos[0], 1, MAX_NEIGHBOURS)
        # an empty PLATFORM ("idle-neighbours:2:") stays '' and fails the platform lookup
        self.platform_ref = pos[1] if len(pos) == 2 else None

    def plans(self, env):
        spec = self.neighbour_spec(env)
        return [engine.EnvPlan("target")] + [
            engine.EnvPlan(f"neighbour-{i}", spec, activity="idle", start_after_s=self.delay)
            for i in range(1, self.k + 1)
        ]


@register
class Identical(_Colocation):
    kind = "identical"
    usage = "identical[:load=PCT]"
    description = "two environments of the target's platform serving the same workload"

    def plans(self, env):
        return [
            engine.EnvPlan("target", load_pct=self.load),
            engine.EnvPlan("neighbour-1", self.neighbour_spec(env), load_pct=self.load),
        ]


@register
class Heterogeneous(Identical):
    kind = "heterogeneous"
    usage = "heterogeneous:PLATFORM[:load=PCT]"
    description = "the target beside a neighbour of another platform, same workload"

    def parse(self, pos):
        if len(pos) != 1 or not pos[0]:
            raise ValueError(f"scenario '{self.kind}': usage {self.usage}")
        self.platform_ref = pos[0]


@register
class Different(_Colocation):
    kind = "different"
    usage = "different:SIZE_KB[:load=PCT]"
    description = "the neighbour serves SIZE_KB files while the target serves its own size"

    def parse(self, pos):
        if len(pos) != 1:
            raise ValueError(f"scenario '{self.kind}': usage {self.usage} (e.g. different:100)")
        self.size_kb = _int_arg(self.kind, "SIZE_KB", pos[0], 1, 1_048_576)

    def plans(self, env):
        from ..errors import VirtbenchError

        w = type(env.workload)
        size_param = rates.size_param(w)
        if size_param is None:
            raise VirtbenchError(
                f"scenario '{self.text()}' needs a workload with a file size parameter "
                f"(ServedSizes.size_param); test case {w.name} has: "
                f"{', '.join(sorted(w.params)) or 'none'}"
            )
        # one run of SIZE_KB beside each of the target's sizes, so both run (and step) for as
        # long as each other: with file_sizes = [1, 4, ... 100] the target sweeps seven sizes
        # and a single 100 KB run would leave six of them alone (invalid)
        own = env.ctx.params.get(size_param)
        n = len(own) if isinstance(own, list) and own else 1
        value = [self.size_kb] * n if isinstance(w.params[size_param].default, list) else None
        return [
            engine.EnvPlan("target", load_pct=self.load),
            engine.EnvPlan(
                "neighbour-1",
                self.neighbour_spec(env),
                params={size_param: value if value is not None else self.size_kb},
                load_pct=self.load,
            ),
        ]


@register
class Many(_Colocation):
    kind = "many"
    usage = "many:N[:load=PCT]"
    description = "N environments of the target's platform, each at PCT % (default 10) load"

    def parse(self, pos):
        if len(pos) != 1:
            raise ValueError(f"scenario '{self.kind}': usage {self.usage} (e.g. many:6)")
        self.n = _int_arg(self.kind, "N", pos[0], 1, MAX_NEIGHBOURS + 1)

    def _pct(self, env: ScenarioEnv) -> float | None:
        # seed 003 Fig. 21: 10 % each; a workload without a rate knob runs unthrottled
        if self.load is None and rates.rate_param(type(env.workload)) is not None:
            return 10.0
        return self.load

    def plans(self, env):
        spec, pct = self.neighbour_spec(env), self._pct(env)
        return [engine.EnvPlan("target", load_pct=pct)] + [
            engine.EnvPlan(f"neighbour-{i}", spec, load_pct=pct) for i in range(1, self.n)
        ]


@register
class Weights(_Colocation):
    kind = "weights"
    usage = "weights:A:B:C[:load=PCT][:cpu=N][:clients=other|all]"
    description = (
        "CPU weight ratios host back end : target : neighbour (seed 003 §6), every "
        "environment on one shared CPU (cpu=N), the load generators on the others"
    )
    options = ("load", "cpu", "clients")

    def parse(self, pos):
        if len(pos) != 3:
            raise ValueError(
                f"scenario '{self.kind}': usage {self.usage} (three weights, e.g. 0.5:1:1)"
            )
        ratios = [
            _arg(
                self.kind,
                f"weight {name}",
                text,
                lambda t: parsing.number(t, 0, above=True),
                "a number > 0 (a ratio such as 0.5, 1 or 2)",
            )
            for name, text in zip(("A", "B", "C"), pos, strict=True)
        ]
        shares = [round(BASE_SHARES * r) for r in ratios]
        if not all(2 <= s <= 262144 for s in shares):
            raise ValueError(
                f"scenario '{self.kind}': weights give cpu.shares {shares}; each must be "
                "2..262144 (weight 1 = 1024)"
            )
        self.ratios = ratios
        self.host_shares, self.target_shares, self.neighbour_shares = shares
        try:
            self.cpu = parse_cpu(self.opts["cpu"]) if "cpu" in self.opts else None
        except ValueError as exc:
            raise ValueError(f"scenario '{self.kind}': {exc}") from None
        self.clients = self.opts.get("clients", "other")
        if self.clients not in CLIENTS:
            raise ValueError(
                f"scenario '{self.kind}': clients={self.clients}: allowed: {', '.join(CLIENTS)}"
            )

    def placement(self, env, plans):
        # weights decide only between environments that want the same CPU at once
        specs = {p.role: p.spec or env.target.spec for p in plans}
        return shared_cpu(
            specs,
            self.text(),
            self.cpu,
            env.ctx.cpus,
            env.ctx.client_cpus,
            clients=self.clients,
            client_host=env.ctx.remote is not None,
        )

    def _backlog(self, env) -> int | None:
        if self.load is not None:  # fixed-rate (open-loop) clients keep their own backlog
            return None
        return backlog_connections(env.budget, env.ctx.params.get("connections"))

    def plans(self, env):
        conns = self._backlog(env)
        params = {"connections": conns} if conns else {}
        return [
            engine.EnvPlan(
                "target", params=params, load_pct=self.load, cpu_weight=self.target_shares
            ),
            engine.EnvPlan(
                "neighbour-1",
                self.neighbour_spec(env),
                params=params,
                load_pct=self.load,
                cpu_weight=self.neighbour_shares,
            ),
        ]

    def labels(self, env):
        r = self.ratios
        out = super().labels(env) | {
            labelkeys.WEIGHTS: {"host": r[0], "target": r[1], "neighbour-1": r[2]}
        }
        if conns := self._backlog(env):
            out["backlog_connections"] = (
                f"{env.ctx.params['connections']} -> {conns} per client: the shared budget "
                f"{env.budget.facts().text()} runs the pair in bursts; both servers need requests "
                "waiting for the whole burst for the weights to divide it"
            )
        return out


@register
class Startup(IdleNeighbours):
    """IdleNeighbours whose neighbours are provisioned DELAY_S after the target started."""

    kind = "startup"
    usage = "startup:K[:PLATFORM[:DELAY_S]][:load=PCT]"
    description = (
        "K newcomers start DELAY_S (default 2) after the target's load began; load=PCT: the "
        "target offered PCT % of its solo peak at each size (seed 003 Fig. 14: ~90 %)"
    )
    options = ("load",)

    def parse(self, pos):
        if len(pos) > 3:
            raise ValueError(f"scenario '{self.kind}': usage {self.usage}")
        super().parse(pos[:2])
        self.platform_ref = self.platform_ref or None  # startup:K::DELAY_S: target's platform
        self.delay = 2.0
        if len(pos) == 3:
            self.delay = _arg(
                self.kind,
                "DELAY_S",
                pos[2],
                lambda t: parsing.number(t, 0, 3600),
                "seconds (0..3600)",
            )

    def plans(self, env):
        # the target's fixed rate (None: as before, the workload's own); each size's storm is
        # its own scene with one size, so load=PCT's one-size rule holds per scene
        plans = super().plans(env)
        plans[0] = replace(plans[0], load_pct=self.load)
        return plans
