"""The co-location engine: a target plus neighbour environments, started in a defined order,
run over one time window, sampled once a second, torn down in reverse order.

A scenario (scenarios/colocation.py) only builds a list of `EnvPlan`s; this module does the
rest: memory check before anything starts, provisioning (a neighbour that fails to start
fails the cell and tears down what was started), CPU weights, rates as a % of each
environment's solo peak, concurrent runs, window coverage, sampling and role naming.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import VirtbenchError, WorkloadError
from ..metrics.env_sampler import EnvSampler
from ..platforms.base import Platform, PlatformSpec
from ..workloads.base import RunContext, Sample
from . import weights as weights_mod
from .base import ScenarioEnv

IDLE_ARGV = ["sleep", "infinity"]
# The parameter of a workload that sets its offered rate (absolute, per second); `load=PCT`
# scenarios set it to PCT % of the environment's solo peak.
RATE_PARAM = "rate"
# Names a workload may give its served file size (KiB); `different:SIZE` sets it.
SIZE_PARAMS = ("file_sizes", "file_kb", "file_size_kb", "size_kb", "file_size")
# Rough memory each environment needs when its spec does not say (MiB).
DEFAULT_MIB = {"native": 16, "container": 64, "vm": 512}
MEMORY_KEYS = ("memory_mib", "memory_mb", "mem_mib", "mem_mb", "memory")
RESERVE_MIB = 512  # left for the host, the clients and the other engineers' work
MIN_COVERAGE = 0.95  # busy environments must overlap this much of each other's run


@dataclass
class EnvPlan:
    role: str  # "target" or "neighbour-N"
    spec: PlatformSpec | None = None  # None: the runner's target platform
    activity: str = "workload"  # "workload" (the cell's test case) or "idle"
    params: dict[str, Any] = field(default_factory=dict)  # overrides of the cell's params
    load_pct: float | None = None  # offered rate as % of this environment's solo peak
    cpu_weight: int | None = None  # cgroup v1 cpu.shares scale
    start_after_s: float | None = None  # start-up storm: provision this long after the target


@dataclass
class _Env:
    plan: EnvPlan
    platform: Platform
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None
    window: tuple[float, float] | None = None
    startup_s: float | None = None


# solo peaks measured in this process: (platform name, test case, params) -> value
_PEAKS: dict[tuple[str, str, str], float] = {}


def spec_mib(spec: PlatformSpec) -> int:
    from ..platforms import registry

    cls = registry.load_all().get(spec.type)
    schema = {k: v[0] for k, v in cls.options_schema.items()} if cls else {}
    for key in MEMORY_KEYS:
        value = spec.options.get(key, schema.get(key))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    own = DEFAULT_MIB.get(spec.type, 64)
    return own + (spec_mib(spec.host) if spec.host is not None else 0)


def mem_available_mib(meminfo: str | None = None) -> int:
    text = meminfo if meminfo is not None else Path("/proc/meminfo").read_text()
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise VirtbenchError("cannot read MemAvailable from /proc/meminfo")


def check_memory(plans: list[EnvPlan], what: str, meminfo: str | None = None) -> None:
    """Refuse before starting anything if the neighbours cannot fit in memory."""
    new = [p for p in plans if p.spec is not None]
    need = sum(spec_mib(p.spec) for p in new)  # type: ignore[arg-type]
    have = mem_available_mib(meminfo) - RESERVE_MIB
    if need > have:
        per = ", ".join(f"{p.role} {p.spec.name} ~{spec_mib(p.spec)} MiB" for p in new)  # type: ignore[union-attr]
        raise VirtbenchError(
            f"scenario '{what}': {len(new)} neighbour environments need about {need} MiB "
            f"({per}) but only {have} MiB are available (MemAvailable minus {RESERVE_MIB} MiB "
            "reserve); use fewer neighbours or smaller ones (platform option memory_mib)"
        )


def _ctx_for(env: ScenarioEnv, params: dict[str, Any], tag: str) -> RunContext:
    def record(metric: str, t: float, value: float, unit: str, role: str = "target") -> None:
        env.ctx.series(metric, t, value, unit, tag if role == "target" else f"{role}:{tag}")

    return replace(env.ctx, params=params, series=record)


def _params(env: ScenarioEnv, plan: EnvPlan) -> dict[str, Any]:
    params = dict(env.ctx.params) | plan.params
    return params


def solo_peak(env: ScenarioEnv, platform: Platform, params: dict[str, Any]) -> float:
    """The environment's solo peak of the primary metric, measured once per run and cached."""
    w = env.workload
    unlimited = {k: v for k, v in params.items() if k != RATE_PARAM} | {
        RATE_PARAM: type(w).params[RATE_PARAM].default
    }
    key = (platform.name, w.name, repr(sorted(unlimited.items())))
    if key not in _PEAKS:
        env.ctx.log(f"measuring solo peak of {w.name} on {platform.name}")
        samples = type(w)().run(platform, replace(env.ctx, params=unlimited))
        primary = type(w).primary().name
        values = [s.value for s in samples if s.metric == primary and not s.labels.get("invalid")]
        if not values:
            raise WorkloadError(f"{w.name}: no valid {primary} sample in the solo-peak run")
        _PEAKS[key] = max(values)
    return _PEAKS[key]


def _apply_load(env: ScenarioEnv, e: _Env, params: dict[str, Any]) -> dict[str, Any]:
    if e.plan.load_pct is None:
        return params
    w = type(env.workload)
    if RATE_PARAM not in w.params:
        raise VirtbenchError(
            f"load=PCT needs a workload with a '{RATE_PARAM}' parameter; test case {w.name} "
            f"has: {', '.join(sorted(w.params)) or 'none'}"
        )
    peak = solo_peak(env, e.platform, params)
    rate = max(1.0, peak * e.plan.load_pct / 100.0)
    default = w.params[RATE_PARAM].default
    return params | {RATE_PARAM: int(rate) if isinstance(default, int) else rate}


def _label(samples: list[Sample], e: _Env, extra: dict[str, Any]) -> list[Sample]:
    for s in samples:
        if s.role == "client":
            s.labels["client_of"] = e.plan.role
        else:
            s.role = e.plan.role
        s.labels.update(extra)
        s.labels.setdefault("env_platform", e.platform.name)
    return samples


def _run_workload(
    env: ScenarioEnv, e: _Env, params: dict[str, Any], gate: threading.Barrier
) -> None:
    ctx = _ctx_for(env, params, e.plan.role)
    with contextlib.suppress(threading.BrokenBarrierError):
        gate.wait(timeout=60)
    t0 = time.monotonic()
    try:
        e.samples = type(env.workload)().run(e.platform, ctx)
    except (WorkloadError, VirtbenchError) as exc:
        e.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - reported as this environment's failure
        e.error = f"internal error: {exc!r}"
    finally:
        e.window = (t0, time.monotonic())


def _coverage(target: tuple[float, float], other: tuple[float, float]) -> float:
    span = target[1] - target[0]
    if span <= 0:
        return 1.0
    overlap = min(target[1], other[1]) - max(target[0], other[0])
    return max(0.0, overlap) / span


def run(
    env: ScenarioEnv,
    plans: list[EnvPlan],
    what: str,
    labels: dict[str, Any],
    host_weight: int | None = None,
) -> list[Sample]:
    """Run one co-location cell; return samples of every role (target, neighbour-N, client).

    `host_weight` (cpu.shares scale) goes to the host-side back-end work that can be grouped
    (see scenarios/weights.py)."""
    check_memory(plans, what)
    with ExitStack() as stack:
        envs = _start(env, plans, what, stack)
        weight_notes = weights_mod.apply(
            [(e.platform, e.plan.cpu_weight, e.plan.role) for e in envs],
            host_weight,
            stack,
        )
        active = [e for e in envs if e.plan.start_after_s is None]
        late = [e for e in envs if e.plan.start_after_s is not None]
        sampler = EnvSampler(
            {e.plan.role: e.platform for e in active},
            env.ctx.series,
            t0=env.started,
            skip_cpu=frozenset({"target"}),
        )
        target = next(e for e in envs if e.plan.role == "target")
        params = {e.plan.role: _apply_load(env, e, _params(env, e.plan)) for e in active}
        # idle neighbours first (they are part of the scene), then every busy environment
        # at once behind a barrier so all measure the same window with the same duration
        for e in active:
            if e.plan.activity == "idle":
                stack.enter_context(_idle(e))
        busy = [e for e in active if e.plan.activity == "workload"]
        gate = threading.Barrier(len(busy))
        threads = [
            threading.Thread(
                target=_run_workload, args=(env, e, params[e.plan.role], gate), daemon=True
            )
            for e in busy
        ]
        with sampler:
            storm = _Storm(env, late, sampler, stack)
            for th in threads:
                th.start()
            storm.start()
            for th in threads:
                th.join()
            storm.join()
        if target.error:
            raise WorkloadError(target.error)
        return _collect(envs, target, sampler, labels | weight_notes, params)


def _start(env: ScenarioEnv, plans: list[EnvPlan], what: str, stack: ExitStack) -> list[_Env]:
    envs = []
    for plan in plans:
        if plan.spec is None:
            envs.append(_Env(plan, env.target))
            continue
        if plan.start_after_s is not None:
            envs.append(_Env(plan, None))  # type: ignore[arg-type] - provisioned by the storm
            continue
        try:
            platform = stack.enter_context(env.new_platform(plan.spec, plan.role))
        except Exception as exc:
            started = [e.plan.role for e in envs if e.plan.spec is not None]
            raise VirtbenchError(
                f"scenario '{what}': {plan.role} on platform '{plan.spec.name}' failed to start:"
                f" {exc}; torn down: {', '.join(started) or 'nothing else was started'}"
            ) from exc
        envs.append(_Env(plan, platform))
    return envs


@contextlib.contextmanager
def _idle(e: _Env):
    """An idle neighbour keeps one sleeping process, so it has something to account."""
    proc = e.platform.spawn(IDLE_ARGV)
    try:
        yield
    finally:
        proc.stop(timeout=2)


class _Storm:
    """Start newcomers while the target runs; time each one's start-up."""

    def __init__(self, env: ScenarioEnv, late: list[_Env], sampler: EnvSampler, stack) -> None:
        self.env, self.late, self.sampler, self.stack = env, late, sampler, stack
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def start(self) -> None:
        for e in self.late:
            th = threading.Thread(target=self._one, args=(e,), daemon=True)
            th.start()
            self.threads.append(th)

    def join(self) -> None:
        for th in self.threads:
            th.join()

    def _one(self, e: _Env) -> None:
        time.sleep(e.plan.start_after_s or 0)
        t0 = time.monotonic()
        try:
            cm = self.env.new_platform(e.plan.spec, e.plan.role)  # type: ignore[arg-type]
            platform = cm.__enter__()
            with self.lock:
                self.stack.push(cm.__exit__)
            check = platform.exec(["true"], timeout=120)
            if not check.ok:
                raise VirtbenchError(f"first command failed: {check.stderr.strip()[-200:]}")
        except Exception as exc:  # noqa: BLE001 - recorded on the newcomer, target keeps going
            e.error = f"failed to start: {exc}"
            e.window = (t0, time.monotonic())
            return
        e.platform = platform
        e.startup_s = time.monotonic() - t0
        e.window = (t0, t0 + e.startup_s)
        self.sampler.add(e.plan.role, platform)


def _collect(envs, target, sampler, labels, params) -> list[Sample]:
    out: list[Sample] = []
    problems = []
    for e in envs:
        if e.error and e is not target:
            problems.append(f"{e.plan.role}: {e.error}")
        if (
            e is not target
            and e.plan.activity == "workload"
            and e.plan.start_after_s is None
            and e.window
            and target.window
            and not e.error
        ):
            cov = min(_coverage(target.window, e.window), _coverage(e.window, target.window))
            if cov < MIN_COVERAGE:
                problems.append(
                    f"{e.plan.role} and the target overlapped for only {cov:.0%} of a run"
                )
    base = dict(labels)
    for e in envs:
        extra = base | {"env_params": params.get(e.plan.role)}
        if e.plan.load_pct is not None:
            extra["load_pct"] = e.plan.load_pct
        out.extend(_label(e.samples, e, extra))
        if e.startup_s is not None:
            out.append(Sample("startup_s", e.startup_s, "s", False, e.plan.role, dict(base)))
    if problems:
        # the scene was not what the cell claims: flag every workload result, drop none
        reason = "; ".join(problems)
        for s in out:
            s.labels.setdefault("invalid", f"neighbours not as planned: {reason}")
    for (role, metric), st in sorted(sampler.summary().items()):
        out.append(
            Sample(
                metric,
                st.mean,
                st.unit,
                False,
                role,
                base | {"stat": "mean of 1 s samples", "stdev": st.stdev, "cov": st.cov, "n": st.n},
            )
        )
    return out
