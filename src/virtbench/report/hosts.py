"""Hosts side by side: the runs of several hosts (a fleet's, or any runs named) in one table
per test case, one row per host and group. Hosts are a dimension, never pooled: a mean over
hosts would hide the very difference a fleet run measures (seed 001's table puts Hyper-V,
ESXi and Xen side by side, each a host's own figures).

A host is named by its run's host facts: the fleet's inventory name (`fleet_host`), else
the hostname; its hypervisor by `hypervisor` (hostinfo.hypervisor), else `virtualization`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..analysis import groups as groups_mod
from ..store.db import Store
from . import fmt


@dataclass
class HostRun:
    host: str
    run_id: str
    hypervisor: str
    facts: dict[str, Any]


@dataclass
class Row:
    host: HostRun
    group: groups_mod.Group


def host_run(store: Store, run_id: str, name: str | None = None) -> HostRun:
    facts = json.loads(store.run(run_id).get("host_json") or "{}")
    host = name or facts.get("fleet_host") or facts.get("hostname") or run_id
    hv = facts.get("hypervisor") or facts.get("virtualization") or "unknown"
    return HostRun(str(host), run_id, str(hv), facts)


def rows(store: Store, hosts: list[HostRun], all_metrics: bool = False) -> list[Row]:
    """Every host's groups (primary metrics of the target unless `all_metrics`), sorted so
    the hosts of one group stand together."""
    out: list[Row] = []
    for hr in hosts:
        for g in groups_mod.build(store.sample_rows(hr.run_id), store.description(hr.run_id)):
            if all_metrics or (g.primary and g.key.role == "target"):
                out.append(Row(hr, g))
    out.sort(key=lambda r: (r.group.key.sort_key(), r.host.host))
    return out


def markdown(rows_: list[Row], title: str) -> str:
    lines = [f"# {title}", ""]
    hosts = {r.host.host: r.host for r in rows_}
    lines += ["| host | hypervisor | run | CPU | kernel |", "|---|---|---|---|---|"]
    for h in sorted(hosts.values(), key=lambda h: h.host):
        f = h.facts
        lines.append(
            f"| {h.host} | {h.hypervisor} | {h.run_id} | {f.get('cpu_model', '?')}"
            f" | {f.get('kernel', '?')} |"
        )
    current = None
    for r in rows_:
        k = r.group.key
        head = (k.test_case, k.metric, k.role)
        if head != current:
            current = head
            hib = "higher is better" if r.group.higher_is_better else "lower is better"
            lines += [
                "",
                f"## {k.test_case}: {k.metric} ({r.group.unit}, {hib}, role {k.role})",
                "",
                "| platform | scenario | point | host | hypervisor | n | mean ± 95% CI | CV"
                " | invalid |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
        s = r.group.summary
        lines.append(
            f"| {k.platform} | {k.scenario} | {fmt.dims(k.dims) or '-'} | {r.host.host}"
            f" | {r.host.hypervisor} | {s.n} | {fmt.mean_ci(s.mean, s.ci_half)}"
            f" | {fmt.pct(s.cv)} | {r.group.n_invalid or ''} |"
        )
    return "\n".join(lines) + "\n"


def to_json(rows_: list[Row]) -> list[dict[str, Any]]:
    out = []
    for r in rows_:
        k, s = r.group.key, r.group.summary
        out.append(
            {
                "host": r.host.host,
                "hypervisor": r.host.hypervisor,
                "run_id": r.host.run_id,
                "platform": k.platform,
                "suite": k.suite,
                "test_case": k.test_case,
                "scenario": k.scenario,
                "role": k.role,
                "metric": k.metric,
                "dims": dict(k.dims),
                "unit": r.group.unit,
                "higher_is_better": r.group.higher_is_better,
                "n": s.n,
                "mean": s.mean,
                "ci_half": s.ci_half,
                "stdev": s.stdev,
                "invalid": r.group.n_invalid,
            }
        )
    return out
