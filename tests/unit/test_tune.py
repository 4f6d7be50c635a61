"""`virtbench tune` on a fake sysfs/procfs tree: plan, apply, record, reset, missing knobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench import tune
from virtbench.analysis.fingerprint import MATTERS_IF_KNOWN


def _host(root: Path, boost: bool = True) -> None:
    (root / "sys/devices/system/cpu/cpufreq").mkdir(parents=True)
    for cpu in (0, 1):
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("schedutil\n")
        (d / "scaling_available_governors").write_text("performance schedutil\n")
    if boost:
        (root / "sys/devices/system/cpu/cpufreq/boost").write_text("1\n")
    thp = root / "sys/kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    (thp / "defrag").write_text("[never] defer madvise\n")
    for irq in (24, 25):
        d = root / f"proc/irq/{irq}"
        d.mkdir(parents=True)
        (d / "smp_affinity_list").write_text("0-1\n")


def test_tune_sets_records_and_reset_restores_exactly(tmp_path):
    root, state = tmp_path / "root", tmp_path / "run/tune.json"
    _host(root)
    before = {p: p.read_text() for p in root.rglob("*") if p.is_file()}
    changes = tune.apply(root, housekeeping=0, state=state)
    status = {c.path: c.status for c in changes}
    assert status["/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"] == tune.SET
    assert status["/sys/devices/system/cpu/cpufreq/boost"] == tune.SET
    assert status["/sys/kernel/mm/transparent_hugepage/defrag"] == tune.ALREADY
    assert (root / "proc/irq/25/smp_affinity_list").read_text().strip() == "0"
    assert tune.summary(state) == {"governor": 2, "turbo": 1, "thp": 1, "irq": 2}
    with pytest.raises(RuntimeError, match="already tuned"):
        tune.apply(root, state=state)
    lines = tune.reset(root, state)
    assert len(lines) == 6 and all(x.startswith("restored") for x in lines)
    # THP's file reads back as its mode list: the active mode is what was restored
    assert (root / "sys/kernel/mm/transparent_hugepage/enabled").read_text() == "madvise\n"
    after = {p: p.read_text() for p in root.rglob("*") if p.is_file()}
    changed = {p for p in before if before[p].strip() != after[p].strip()}
    assert changed == {root / "sys/kernel/mm/transparent_hugepage/enabled"}
    assert not state.exists() and tune.summary(state) is None


def test_a_guest_without_knobs_says_so_and_writes_nothing(tmp_path):
    root, state = tmp_path / "root", tmp_path / "tune.json"
    root.mkdir()
    changes = tune.apply(root, state=state)
    assert {c.knob for c in changes} == {"governor", "turbo", "thp"}
    assert all(c.status == tune.UNAVAILABLE for c in changes)
    assert not state.exists()


def test_tune_sets_cubic_where_the_host_runs_bbr_and_reset_puts_bbr_back(tmp_path):
    root, state = tmp_path / "root", tmp_path / "tune.json"
    cc = root / "proc/sys/net/ipv4/tcp_congestion_control"
    cc.parent.mkdir(parents=True)
    cc.write_text("bbr\n")
    changes = tune.apply(root, state=state)
    assert [(c.knob, c.old, c.status) for c in changes if c.knob == "tcp"] == [
        ("tcp", "bbr", tune.SET)
    ]
    assert cc.read_text() == "cubic\n" and tune.summary(state) == {"tcp": 1}
    tune.reset(root, state)
    assert cc.read_text().strip() == "bbr"
    cc.write_text("cubic\n")
    assert [c.status for c in tune.plan(root) if c.knob == "tcp"] == [tune.ALREADY]


def test_dry_run_writes_nothing(tmp_path):
    root = tmp_path / "root"
    _host(root, boost=False)
    plan = tune.plan(root)
    assert [c.status for c in plan if c.knob == "turbo"] == [tune.UNAVAILABLE]
    gov = root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
    assert gov.read_text() == "schedutil\n"


def test_tuned_hosts_are_not_compared_silently():
    assert "tuned" in MATTERS_IF_KNOWN
