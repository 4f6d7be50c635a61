"""A synthetic store shaped like a finished `colocation-web` run, written through the real
Store API: 6 platforms x 8 scenarios x 3 repetitions of httperf sweeps (7 file sizes x 10
steps of 2 s), solo-peak cells per platform and size, per-step samples of every busy
environment and its client, per-point resource summaries of every role, and the 1 s series.
Labels copy what the runner writes (scenario labels, env_params with the lockstep schedule,
solo peaks and their cells, CPU budget, net_path); values are made up, deterministic
(seeded) and plausible: the report's cost is in the rows' count and shape, not their values.

Not a bench by itself: `report_cost.py` renders its report. Nothing here measures anything.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import virtbench
from virtbench.results import Sample
from virtbench.runner.describe import describe
from virtbench.store.db import Store

TEST_CASE = "httperf-sweep"
SIZES = (1, 4, 10, 30, 50, 70, 100)
STEPS = 10
STEP_S = 2.0
SCENARIOS = (
    "solo",
    "idle-neighbours:3",
    "identical",
    "different:100",
    "different:50",
    "heterogeneous:vm-e1000",
    "heterogeneous:vm-virtio",
    "heterogeneous:container",
)
# name -> (type, 1 KB capacity in req/s, client's net_path, cpu_quota_us)
PLATFORMS = {
    "native": ("native", 8000.0, "loopback", 50000),
    "container": ("container", 7000.0, "bridge", 50000),
    "vm-virtio": ("vm", 1500.0, "host-bridge", 100000),
    "vm-e1000": ("vm", 1200.0, "host-bridge", 100000),
    "crun-in-vm": ("container", 1300.0, "host-bridge", None),
    "crun-in-hvm": ("container", 1000.0, "host-bridge", None),
}
# solo peaks of a TCG guest first read low (the sweep never saturates) and are measured again
# wider; this one kept its low peak (a store from before the retry): its pairs' ratios are
# voided (analysis/colocation.py unsaturated_peaks)
UNSATURATED = ("vm-virtio", 4)
STEP_METRICS = (
    "offered_rate",
    "reply_rate",
    "send_rate",
    "reply_time_ms",
    "transfer_time_ms",
    "connection_time_ms",
    "connect_time_ms",
    "net_throughput",
    "errors",
    "error_pct",
    "replies_non_2xx",
    "max_connect_burst",
)
# the sampler's per-environment metrics (cpu_us_per_exe of busy ones only) and the host's
RESOURCES = (
    ("cpu_util", "%"),
    ("disk_read_bytes_per_s", "B/s"),
    ("disk_write_bytes_per_s", "B/s"),
    ("exe_per_s", "1/s"),
    ("invol_switches_per_s", "1/s"),
    ("mem_mib", "MiB"),
    ("net_rx_bytes_per_s", "B/s"),
    ("net_rx_packets_per_s", "1/s"),
    ("net_tx_bytes_per_s", "B/s"),
    ("net_tx_packets_per_s", "1/s"),
    ("sched_blocked_pct", "%"),
    ("sched_run_pct", "%"),
    ("sched_wait_pct", "%"),
    ("tasks", "count"),
    ("vol_switches_per_s", "1/s"),
)
BUSY_ONLY = (("cpu_us_per_exe", "us"),)
HOST = (("ksoftirqd_util", "%"), ("net_softirqs_per_s", "1/s"), ("softirq_pct", "%"))
PARAMS = {
    "file_sizes": list(SIZES),
    "port": 0,
    "workers": 0,
    "calls_per_conn": 1,
    "mode": "capacity",
    "start_fraction": 0.1,
    "step_fraction": 0.1,
    "max_fraction": 1.0,
    "rate_start": 100,
    "rate_step": 100,
    "max_steps": 30,
    "step_duration": STEP_S,
    "fall_steps": 10,
    "error_threshold_pct": 10.0,
    "timeout": 5.0,
    "probe_duration": 2.0,
    "probe_connections": 32,
    "hog": False,
    "clients": 0,
    "server_closes": True,
    "rate": 0.0,
    "duration": 10.0,
}
SERIES = tuple[str, str, float, float, str]
UNITS = {m.metric: (m.unit, m.higher_is_better) for m in describe([TEST_CASE]).metrics}


@dataclass
class Env:
    """One environment of a cell: its role, platform, what it does and the sizes it serves
    (one per target size: a different:SIZE neighbour serves its one size beside each)."""

    role: str
    platform: str
    busy: bool
    sizes: tuple[int, ...] = SIZES
    share: float = 1.0  # of its solo capacity, while it shares the CPU budget


@dataclass
class Cell:
    cell_id: str
    platform: str
    scenario: str
    rep: int
    envs: list[Env]
    samples: list[Sample] = field(default_factory=list)
    series: list[SERIES] = field(default_factory=list)


def capacity(platform: str, size: int) -> float:
    return PLATFORMS[platform][1] / (1 + size / 40)


def platform_spec(name: str) -> dict[str, Any]:
    kind, _cap, path, quota = PLATFORMS[name]
    spec: dict[str, Any] = {
        "platform_type": kind,
        "cpu_quota_us": quota,
        "cpu_period_us": None,
        "cpuset": None,
        "memory_limit": None,
        "network": path,
    }
    if kind == "vm":
        spec |= {
            "accel_used": "tcg",
            "vcpus": 1,
            "memory_mb": 512,
            "disk_cache": "none",
            "net": "virtio" if "virtio" in name else "e1000",
        }
    if kind == "container":
        spec |= {
            "runtime": "crun",
            "storage": "overlay",
            "runtime_version": "1.8.1",
            "image": "7623a4317330",
            "cgroup": "v2",
            "rt_runtime_us": "auto",
        }
    return spec


def plan(platform: str, scenario: str) -> list[Env]:
    """The environments a scenario runs: the target first."""
    kind, _, arg = scenario.partition(":")
    if kind == "solo":
        return [Env("target", platform, True)]
    if kind == "idle-neighbours":
        idle = [Env(f"neighbour-{i}", platform, False) for i in range(1, int(arg) + 1)]
        return [Env("target", platform, True, share=0.9), *idle]
    if kind == "different":
        size = int(arg)
        return [
            Env("target", platform, True, share=0.7),
            Env("neighbour-1", platform, True, (size,) * len(SIZES), 0.5),
        ]
    other = arg if kind == "heterogeneous" else platform
    return [Env("target", platform, True, share=0.55), Env("neighbour-1", other, True, share=0.55)]


class Builder:
    """Fills one run: cells in campaign order, each committed as the runner commits it."""

    def __init__(self, store: Store, run_id: str, reps: int, seed: int = 1) -> None:
        self.store, self.run_id, self.reps = store, run_id, reps
        self.rng = random.Random(seed)
        self.seq = 0
        self.peaks: dict[tuple[str, int], tuple[float, str]] = {}  # (platform, size) -> peak

    def next_id(self) -> str:
        self.seq += 1
        return f"{self.run_id}/{self.seq - 1:04d}"

    def noise(self, x: float, pct: float = 0.03) -> float:
        return x * (1 + self.rng.uniform(-pct, pct))

    # --- cells ---------------------------------------------------------------------------
    def run(self) -> int:
        """Every cell of the campaign; how many samples were stored."""
        n = 0
        for platform in PLATFORMS:
            for scenario in SCENARIOS:
                for rep in range(1, self.reps + 1):
                    for cell in self.cells(platform, scenario, rep):
                        n += self.commit(cell)
        return n

    def cells(self, platform: str, scenario: str, rep: int) -> Iterator[Cell]:
        envs = plan(platform, scenario)
        if len(envs) > 1 and envs[1].busy:  # a lockstep pair: both peaks first
            for env in envs:
                yield from self.solo_peaks(env.platform, set(env.sizes))
        cell = Cell(self.next_id(), platform, scenario, rep, envs)
        self.fill(cell)
        yield cell

    def solo_peaks(self, platform: str, sizes: set[int]) -> Iterator[Cell]:
        """The solo-peak cells a pair needs and the run has not measured yet; an unsaturated
        one is measured once more, wider (scenarios/peaks.py)."""
        for size in sorted(sizes):
            if (platform, size) in self.peaks:
                continue
            tcg = platform.startswith(("vm-", "crun-in-"))  # a guest, under TCG here
            tries = 2 if tcg and (platform, size) != UNSATURATED else 1
            for attempt in range(tries):
                env = Env("target", platform, True)
                cell = Cell(self.next_id(), platform, "solo-peak", 1, [env])
                low = attempt < tries - 1 or (platform, size) == UNSATURATED
                top = capacity(platform, size) * (0.5 if low else 1.1)
                rates = [top * (k + 1) / STEPS for k in range(STEPS)]
                peak = self.sweep(cell, env, size, rates, {}, t0=0.0, lockstep_n=None)
                probe = {"file_size_kb": size}
                cell.samples.append(Sample("capacity_probe", top, "req/s", True, "target", probe))
                self.peaks[(platform, size)] = (peak, cell.cell_id)
                yield cell

    def fill(self, cell: Cell) -> None:
        kind = cell.scenario.split(":")[0]
        lockstep = len(cell.envs) > 1 and cell.envs[1].busy
        base = self.base_labels(cell, kind, lockstep)
        t, n = 0.0, 0
        target = cell.envs[0]
        for i, size in enumerate(target.sizes):
            for env in cell.envs:
                if not env.busy:
                    continue
                own = env.sizes[i]
                extra = base | self.env_labels(cell, env, lockstep)
                rates = self.rates(env, own, lockstep)
                self.sweep(cell, env, own, rates, extra, t, n if lockstep else None)
                if not lockstep:  # its own capacity probe set the sweep's rates
                    probe = {"file_size_kb": own} | extra
                    cell.samples.append(
                        Sample("capacity_probe", rates[-1], "req/s", True, env.role, probe)
                    )
            self.summaries(cell, base, size, t)
            t += STEPS * STEP_S + 1.0
            n += STEPS
        self.resource_series(cell, t)

    def base_labels(self, cell: Cell, kind: str, lockstep: bool) -> dict[str, Any]:
        if kind == "solo":
            return {}
        quota = PLATFORMS[cell.platform][3]
        out: dict[str, Any] = {
            "scenario_kind": kind,
            "environments": {e.role: e.platform for e in cell.envs},
        }
        if quota:
            out |= {
                "cpu_budget": f"shared:{quota}/100000",
                "cpu_budget_members": [e.role for e in cell.envs],
                "cpu_budget_throttled": f"{self.rng.randint(100, 900)}/1500 periods",
            }
        return out | ({"lockstep": True} if lockstep else {})

    def env_labels(self, cell: Cell, env: Env, lockstep: bool) -> dict[str, Any]:
        if cell.scenario == "solo":
            return {}
        params = dict(PARAMS, file_sizes=sorted(set(env.sizes)))
        out: dict[str, Any] = {"env_params": params}
        if lockstep:
            sizes = sorted(set(env.sizes))
            peaks = {str(s): self.peaks[(env.platform, s)] for s in sizes}
            params["schedule"] = {
                s: [round(p * (k + 1) / STEPS, 1) for k in range(STEPS)]
                for s, (p, _c) in peaks.items()
            }
            out |= {
                "solo_peak": {s: p for s, (p, _c) in peaks.items()},
                "peak_cell_id": {s: c for s, (_p, c) in peaks.items()},
            }
        return out | {"env_platform": env.platform}

    def rates(self, env: Env, size: int, lockstep: bool) -> list[float]:
        top = (
            self.peaks[(env.platform, size)][0]
            if lockstep
            else self.noise(capacity(env.platform, size) * 1.1)
        )
        return [round(top * (k + 1) / STEPS, 1) for k in range(STEPS)]

    # --- samples -------------------------------------------------------------------------
    def sweep(
        self,
        cell: Cell,
        env: Env,
        size: int,
        rates: list[float],
        extra: dict[str, Any],
        t0: float,
        lockstep_n: int | None,
    ) -> float:
        """One size's sweep of one environment: step samples, client, series, headline; the
        best valid throughput."""
        cap = capacity(env.platform, size) * env.share
        best, best_k, bad = 0.0, 0, 0
        path = PLATFORMS[env.platform][2]
        for k, rate in enumerate(rates):
            served = self.noise(min(rate, cap))
            lab: dict[str, Any] = {
                "step": k,
                "offered_rate": rate,
                "file_size_kb": size,
                "calls_per_conn": 1,
                "client_nofile": 20000,
                "clients": 1,
                "closes": "server",
            }
            invalid = self.invalid(env, k, lockstep_n)
            if invalid:
                lab |= {"client_errors": self.rng.randint(100, 5000), "invalid": invalid}
                bad += 1
            elif served > best:
                best, best_k = served, k
            if lockstep_n is not None:
                lab["lockstep_step"] = lockstep_n + k
            lab = lab | {"net_path": path} | extra
            self.step_samples(cell, env, lab, rate, served, size)
            t = t0 + (k + 1) * STEP_S
            cell.series += [
                (env.role, f"offered_rate.{size}KB", t, rate, "req/s"),
                (env.role, f"reply_rate.{size}KB", t, served, "req/s"),
            ]
            client = "client" if not extra else f"client:{env.role}"
            cell.series.append((client, f"client_cpu_pct.{size}KB", t, self.noise(60.0, 0.4), "%"))
        head = {"file_size_kb": size, "net_path": path} | extra
        stopped = "max-steps" if cell.scenario == "solo-peak" else "schedule"
        cell.samples += [
            Sample("steps", STEPS, "count", True, env.role, head | {"stopped": stopped}),
            Sample("steps_invalid", bad, "count", False, env.role, head),
        ]
        peak = head | {"offered_rate": rates[best_k], "peak_step": best_k}
        cell.samples += [
            Sample("peak_throughput", best, "req/s", True, env.role, peak),
            Sample("peak_offered_rate", rates[best_k], "req/s", True, env.role, peak),
        ]
        return best

    def invalid(self, env: Env, k: int, lockstep_n: int | None) -> str | None:
        if PLATFORMS[env.platform][0] != "vm" and k >= 7 and self.rng.random() < 0.6:
            return (
                "load generator ran out of sockets (fd-unavail=1800; httperf holds at most"
                " 1024 connections; 19.9% of connections could not be opened)"
            )
        if lockstep_n is not None and self.rng.random() < 0.02:
            return "step window not shared: neighbour-1 stopped before it"
        return None

    def step_samples(
        self, cell: Cell, env: Env, lab: dict[str, Any], rate: float, served: float, size: int
    ) -> None:
        values = {
            "offered_rate": rate,
            "reply_rate": served,
            "send_rate": self.noise(rate),
            "reply_time_ms": self.noise(3.0, 0.5),
            "transfer_time_ms": self.noise(0.2 * size, 0.3),
            "connection_time_ms": self.noise(4.0, 0.5),
            "connect_time_ms": self.noise(0.4, 0.5),
            "net_throughput": served * size * 1.03,
            "errors": 0.0,
            "error_pct": 0.0,
            "replies_non_2xx": 0.0,
            "max_connect_burst": float(self.rng.randint(1, 40)),
        }
        for metric in STEP_METRICS:
            unit, hib = UNITS[metric]
            cell.samples.append(Sample(metric, values[metric], unit, hib, env.role, lab))
        if "invalid" in lab:
            errors = lab | {"error_class": "fd-unavail"}
            n = lab["client_errors"]
            cell.samples.append(Sample("errors_by_class", n, "count", False, env.role, errors))
        client = lab | {"client_cpus_busy_pct": self.noise(80.0, 0.2)}
        if "scenario_kind" in lab:
            client["client_of"] = env.role
        cell.samples.append(
            Sample("client_cpu_pct", self.noise(60.0, 0.4), "%", False, "client", client)
        )

    def summaries(self, cell: Cell, base: dict[str, Any], size: int, t0: float) -> None:
        """The sampler's per-point means of every role (metrics/sampler.summary_samples)."""
        for k in range(STEPS):
            point = base | {"file_size_kb": size, "step": k}
            for role, metrics in self.roles(cell):
                for metric, unit in metrics:
                    value = self.noise(50.0, 0.5)
                    stat = {"stat": "mean of 1 s samples", "stdev": value / 10, "cov": 0.1, "n": 2}
                    cell.samples.append(Sample(metric, value, unit, False, role, point | stat))

    def roles(self, cell: Cell) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
        envs = [(e.role, RESOURCES + (BUSY_ONLY if e.busy else ())) for e in cell.envs]
        return [*envs, ("host", HOST)]

    def resource_series(self, cell: Cell, end: float) -> None:
        for role, metrics in self.roles(cell):
            for metric, unit in metrics:
                cell.series += [
                    (role, metric, float(t), self.noise(50.0, 0.5), unit)
                    for t in range(1, int(end))
                ]

    # --- store ---------------------------------------------------------------------------
    def commit(self, cell: Cell) -> int:
        kind = PLATFORMS[cell.platform][0]
        spec = json.dumps({"name": cell.platform, "type": kind, "options": {}, "host": None})
        labels: dict[str, Any] = {"params": PARAMS, "platform": platform_spec(cell.platform)}
        if cell.scenario == "solo-peak":
            peak = max(s.value for s in cell.samples if s.metric == "peak_throughput")
            labels |= {"solo_peak": peak, "solo_peak_metric": "peak_throughput"}
        seq = int(cell.cell_id.rsplit("/", 1)[1])
        row = (cell.cell_id, self.run_id, seq, cell.platform, spec, "web", TEST_CASE)
        self.store.add_cells([(*row, cell.scenario, cell.rep, json.dumps(PARAMS))])
        self.store.start_cell(cell.cell_id)
        self.store.finish_cell(
            self.run_id, cell.cell_id, "ok", cell.samples, cell.series, labels=labels
        )
        return len(cell.samples)


def build(path: Path, reps: int = 3, run_id: str = "20261201-000000-c0c0") -> tuple[str, int]:
    """A new store at `path` holding one synthetic colocation-web run; (run id, samples)."""
    store = Store(path)
    try:
        campaign = Path(virtbench.__file__).parent / "campaigns" / "colocation-web.toml"
        settings = {
            "repetitions": reps,
            "warmup": 1,
            "order": "sequential",
            "seed": None,
            "cell_timeout": 900.0,
            "baseline": "native",
            "adaptive": None,
        }
        store.create_run(
            run_id,
            "colocation-web",
            str(campaign),
            campaign.read_text(),
            None,
            {"hostname": "synthetic", "cpus": 2},
            settings,
            "0",
            description=describe([TEST_CASE]),
        )
        n = Builder(store, run_id, reps).run()
        store.set_run_status(run_id, "finished")
    finally:
        store.close()
    return run_id, n
