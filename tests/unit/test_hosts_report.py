"""Hosts as a dimension: a fleet's runs reported side by side, one row per host, never
pooled; `virtbench fleet report` over a fleet record and --run."""

from __future__ import annotations

import json
import subprocess
import sys

from virtbench.fleet import state
from virtbench.report import hosts
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.workloads.base import Sample

HOSTS = {"xen-pv": ("xen", 900.0), "esxi": ("vmware", 1000.0), "hyperv": ("microsoft", 950.0)}


def _store(tmp_path) -> tuple[Store, dict[str, str]]:
    st = Store.in_dir(tmp_path)
    runs = {}
    for i, (name, (hv, base)) in enumerate(HOSTS.items()):
        run = f"20260101-00000{i}-ab{i:02d}"
        runs[name] = run
        facts = {"hostname": "same-clone", "fleet_host": name, "hypervisor": hv,
                 "cpu_model": "Xeon", "kernel": "6.1"}  # fmt: skip
        st.create_run(run, "fleet", "f.toml", "", 1, facts, {}, "0.1",
                      description=describe(["sysbench-cpu-1t"]))  # fmt: skip
        cells = [
            (
                f"{run}/{r:04d}",
                run,
                r,
                "native",
                '{"name": "native", "type": "native"}',
                "cpu",
                "sysbench-cpu-1t",
                "solo",
                r + 1,
                "{}",
            )  # fmt: skip
            for r in range(3)
        ]
        st.add_cells(cells)
        for r in range(3):
            s = Sample("events_per_s", base + r, "events/s", True, labels={"threads": 1})
            st.finish_cell(run, f"{run}/{r:04d}", "ok", [s], [], None, {})
        st.set_run_status(run, "finished")
    return st, runs


def test_one_row_per_host_never_a_mean_over_hosts(tmp_path):
    st, runs = _store(tmp_path)
    hr = [hosts.host_run(st, run) for run in runs.values()]
    assert [h.host for h in hr] == list(HOSTS)  # fleet_host, not the shared hostname
    rows = hosts.rows(st, hr)
    assert [(r.host.host, r.host.hypervisor) for r in rows] == sorted(
        (n, hv) for n, (hv, _) in HOSTS.items()
    )
    means = {r.host.host: r.group.summary.mean for r in rows}
    assert means == {n: base + 1 for n, (_, base) in HOSTS.items()}  # each host its own
    md = hosts.markdown(rows, "fleet x")
    assert md.count("| native | solo |") == 3 and "| esxi | vmware | 3 |" in md
    assert {j["host"] for j in hosts.to_json(rows)} == set(HOSTS)
    st.close()


def test_fleet_report_command(tmp_path):
    st, runs = _store(tmp_path)
    st.close()
    rec = state.create(tmp_path, "f.toml", tmp_path / "inv.ini", None, [*HOSTS, "ghost"])
    for name, run in runs.items():
        rec.hosts[name].run_id = run
    rec.save()
    cmd = [sys.executable, "-m", "virtbench.cli", "fleet", "report", rec.fleet_id,
           "--results-dir", str(tmp_path)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "xen-pv" in out.stdout and "hyperv" in out.stdout and "ghost: no run" in out.stderr
    lines = subprocess.run([*cmd, "--format", "jsonl"], capture_output=True, text=True)
    recs = [json.loads(x) for x in lines.stdout.splitlines()]
    assert len(recs) == 9 and {r["host"] for r in recs} == set(HOSTS)
    assert {"run_id", "platform", "metric", "value", "hypervisor"} <= set(recs[0])
    bad = subprocess.run(cmd[:5] + ["--results-dir", str(tmp_path)], capture_output=True,
                         text=True)  # fmt: skip
    assert bad.returncode == 2 and "FLEET_ID or --run" in bad.stderr
