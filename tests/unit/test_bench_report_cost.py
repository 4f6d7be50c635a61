"""bench/_synthetic_coloc.py, the store bench/report_cost.py renders: its cells read as a
colocation-web run's do (lockstep pairs scaled by solo-peak cells, a different:SIZE
neighbour beside each of the target's sizes, a peak that never saturated), so the bench
exercises the report's co-location paths, not a shape of its own."""

from __future__ import annotations

import sys
from pathlib import Path

from virtbench.analysis import colocation as coloc
from virtbench.report.data import ReportData
from virtbench.store.db import Store
from virtbench.store.description import DIMENSION

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # last: shadows nothing
import _synthetic_coloc as synth  # noqa: E402

RUN = "20261201-000000-c0c0"


def _data(tmp_path, cells: list[tuple[str, str]]) -> ReportData:
    store = Store(tmp_path / "virtbench.db")
    store.create_run(RUN, "colocation-web", "c.toml", "", None, {}, {"baseline": "native"},
                     "0", description=synth.describe([synth.TEST_CASE]))  # fmt: skip
    b = synth.Builder(store, RUN, reps=1)
    for platform, scenario in cells:
        for cell in b.cells(platform, scenario, 1):
            b.commit(cell)
    return ReportData.load(store, RUN)


def test_a_different_size_pair_reads_as_the_campaigns_do(tmp_path):
    data = _data(tmp_path, [("vm-virtio", "solo"), ("vm-virtio", "different:50")])
    scenarios = [c.scenario for c in data.cells]
    # a guest's 7 peaks (the neighbour's 50 KB among them), each measured again wider but
    # the one kept low
    assert scenarios.count("solo-peak") == 6 * 2 + 1
    pair = [
        r for r in data.samples if r["scenario"] == "different:50" and r["metric"] == "reply_rate"
    ]
    target = [r for r in pair if r["role"] == "target"]
    beside = [r for r in pair if r["role"] == "neighbour-1"]
    assert len(target) == len(beside) == 70  # 7 sizes x 10 lockstep steps, 50 KB beside each
    assert {r["labels"]["file_size_kb"] for r in beside} == {50}
    assert [r["labels"]["lockstep_step"] for r in beside] == list(range(70))
    peaks = {c.cell_id for c in data.cells if c.scenario == "solo-peak"}
    assert set(target[0]["labels"]["peak_cell_id"].values()) <= peaks
    primary = data.description.primary_metrics()
    dims = {tc: data.description.labels_of(DIMENSION, tc) for tc in primary}
    rows = coloc.cell_stats(data.samples, primary, dims)
    stats = {(s.scenario, dict(s.dims)["file_size_kb"]): s for s in rows}
    assert stats[("different:50", 1)].degradation_pct is not None
    assert stats[("different:50", 1)].aggregated_ratio is not None
    assert stats[("different:50", 4)].bad_peak  # scaled by the peak that never saturated
    # the groups tell the neighbour's 50 KB runs apart by the target size they ran beside
    beside_dims = {g.key.dims for g in data.groups if g.key.role == "neighbour-1"
                   and g.key.metric == "peak_throughput"}  # fmt: skip
    assert len(beside_dims) == 7
    data.store.close()
