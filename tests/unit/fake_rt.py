"""A fake cgroup v1 cpu tree of plain files with real-time budgets, for the RT unit tests."""

from pathlib import Path

from virtbench import cgroups


def rt_group(d: Path, runtime: int, period: int = 1_000_000) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "cpu.rt_runtime_us").write_text(f"{runtime}\n")
    (d / "cpu.rt_period_us").write_text(f"{period}\n")
    return d


def rt_runtime(d: Path) -> int:
    return int((d / "cpu.rt_runtime_us").read_text())


def rt_layout(tmp_path: Path, monkeypatch) -> cgroups.Layout:
    """Root granting 950 ms per 1 s, virtbench's parent at 0; the budget lock in tmp_path."""
    monkeypatch.setattr(cgroups.rt, "RT_LOCK", tmp_path / "rt.lock")
    root = rt_group(tmp_path / "cpu", 950_000)
    rt_group(root / cgroups.PARENT, 0)
    return cgroups.Layout("v1", v1_mounts={"cpu": root}, v1_others=[])
