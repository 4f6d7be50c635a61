"""Co-location with VM targets and VM / container-in-VM neighbours, end to end, as root.

About a minute: four TCG guests boot (target, an idle crun-in-VM neighbour's VM, a weighted VM
neighbour, a start-up newcomer) around 3 s sysbench runs. Checks what only VMs have: per-vCPU
scheduler metrics, the QEMU back-end threads apart, tap counters, weights on the QEMU cgroups
and the back-end group, a VM newcomer's start-up time on the cell's time axis; and that
nothing this run created is left (tests/integration/owned.py).
"""

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.campaign import expand
from virtbench.cgroups import Layout
from virtbench.cli import cli

from .owned import Owned

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (taps, cgroups)"),
    pytest.mark.skipif(not shutil.which("qemu-system-x86_64"), reason="needs qemu-system-x86"),
]

CAMPAIGN = """
[campaign]
name = "coloc-vm-it"
repetitions = 1
warmup = 0
cell_timeout = 180
scenarios = ["idle-neighbours:1:crun-in-vm", "weights:2:1:1", "startup:1:vm:0.5"]

[[platforms]]
name = "vm"
type = "vm"
accel = "tcg"
vcpus = 1
memory_mb = 384
net = "virtio"

[[platforms]]
name = "crun-in-vm"
type = "container"
host = "vm-host"
runtime = "crun"
storage = "overlay"
network = "host"

[[platforms]]
name = "vm-host"
type = "vm"
accel = "tcg"
memory_mb = 384
net = "e1000"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 3
"""


def _rows(tmp_path: Path) -> list[dict]:
    out = CliRunner().invoke(
        cli, ["results", "--run", "latest", "--results-dir", str(tmp_path), "--format", "jsonl"]
    )
    return [json.loads(line) for line in out.output.splitlines() if line.strip()]


def test_vm_colocation_end_to_end(tmp_path: Path, monkeypatch):
    owned = Owned(monkeypatch)
    f = tmp_path / "c.toml"
    # only the vm platform is a target: the others exist to be referenced as neighbours
    f.write_text(CAMPAIGN)
    monkeypatch.setattr(expand, "expand", _only_target("vm", expand.expand))
    res = CliRunner().invoke(cli, ["run", str(f), "--results-dir", str(tmp_path), "--no-report"])
    assert res.exit_code == 0, res.output
    rows = _rows(tmp_path)
    got = {(r["scenario"], r["role"], r["metric"]): r for r in rows}

    idle = got[("idle-neighbours:1:crun-in-vm", "neighbour-1", "sched_blocked_pct")]
    assert idle["labels"].get("n", 0) >= 1
    assert got[("idle-neighbours:1:crun-in-vm", "target", "events_per_s")]["valid"]

    w = "weights:2:1:1"
    for role in ("target", "neighbour-1"):
        # a VM names its vCPU threads: one task per vCPU, QEMU's other threads apart
        assert got[(w, role, "tasks")]["value"] == 1
        assert got[(w, role, "vcpu_cpu_util")]["value"] > 10  # it ran sysbench
        assert (w, role, "backend_cpu_util") in got
        assert (w, role, "net_tx_bytes_per_s") in got  # its tap
    labels = got[(w, "target", "events_per_s")]["labels"]
    applied = labels["weights_applied"]
    assert "QEMU process's cgroup" in applied["target"] and "1024" in applied["target"]
    host = labels["host_weight_applied_to"]
    if Layout.detect().version == "v1":
        assert host.startswith("cpu.shares=2048 on ") and "QEMU non-vCPU threads" in host
    else:
        assert "cgroup v2" in host

    up = got[("startup:1:vm:0.5", "neighbour-1", "startup_s")]
    assert 0 < up["value"] < 120
    assert up["labels"]["ready_at_s"] > up["labels"]["started_at_s"] >= 0
    assert owned.instances
    assert owned.leftovers() == []


def _only_target(name, real):
    def expand(campaign, *args, **kwargs):
        return [c for c in real(campaign, *args, **kwargs) if c.platform.name == name]

    return expand
