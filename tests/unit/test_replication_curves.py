"""The paper's points beside the measured curve (replication/curves.py, findings/*-points.toml):
files validated by key, each measured point the finding's own ratio, the chart in the report."""

import gzip
import json
import shutil
import statistics
from pathlib import Path

import pytest

from virtbench import export
from virtbench.replication import compute, curves, load
from virtbench.replication.load import FindingsError
from virtbench.report.data import ReportData
from virtbench.report.suites.replication import replication
from virtbench.store.db import Store

DATA = Path(__file__).parent.parent / "data" / "replication"

PAPER = "paper = [[1, 0.9336], [70, 1.0]]"
POINTS = "curve[0].series[0].paper"
CURVE = """
[[curve]]
id = "c"
figure = "Table 2"
title = "t"
test_case = ["wrk-max"]
platform = ["container"]
x_dim = "file_size_kb"
x_label = "file size (KB)"
base = { scenario = "solo" }

[[curve.series]]
name = "3 idle"
x = { scenario = "idle-neighbours:3" }
paper = [[1, 0.9336], [70, 1.0]]
paper_text = "999/1070, 165/165"
"""


def _open(tmp_path, name):
    db = tmp_path / "virtbench.db"
    with gzip.open(DATA / name) as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    st = Store(db)
    return st, st.runs()[0]["run_id"]


def test_points_files_load_with_the_papers_numbers():
    table2 = curves.load("003")[0]
    assert table2.figure == "Table 2" and [s.name for s in table2.series] == [
        "1 idle",
        "2 idle",
        "3 idle",
    ]
    # the paper's Table 2 row over its (1,0) column, as printed in paper_text
    three = dict((x, v) for x, v, _lo, _hi in table2.series[2].paper)
    assert three[1.0] == pytest.approx(999 / 1070, abs=1e-4)
    assert three[10.0] == pytest.approx(711 / 720, abs=1e-4)
    fig3a = curves.load("000")[0].series[0]
    assert fig3a.paper[0] == (1.0, 0.85, 0.80, 0.90)  # a range the paper gives: 10-20%
    kvm = curves.load("002")[0].series[1]
    assert kvm.span == (1000.0, 45000.0) and {v for _x, v, _l, _h in kvm.paper} == {0.8605}
    assert curves.load("001") == () and curves.load("004") == ()


@pytest.mark.parametrize(
    "edit, key",
    [
        ((PAPER, "paper = [[1]]"), POINTS),
        ((PAPER, "paper = [[1, 0.9, 0.95, 1.0]]"), POINTS),
        (('name = "3 idle"', 'name = "3 idle"\nlevel = 0.9'), "curve[0].series[0]"),
        (('x_dim = "file_size_kb"', 'x_dim = "file_size_kb"\ncolour = 1'), "curve[0].colour"),
        (('platform = ["container"]\n', ""), "curve[0].platform"),
    ],
)
def test_bad_points_file_names_its_key(edit, key):
    with pytest.raises(FindingsError) as e:
        curves.parse(CURVE.replace(*edit), "seed003-points.toml", "003")
    assert f"'{key}" in str(e.value) and "seed003-points.toml" in str(e.value)


def test_each_measured_point_is_the_findings_ratio_and_by_hand(tmp_path):
    """The stored seed 003 run (container, wrk-max at 1 and 70 kB): the 3-idle series has a
    point at each size, equal to Table 2's findings and to the export's means by hand."""
    st, run = _open(tmp_path, "seed003-consolidation-reduced.db.gz")
    data = ReportData.load(st, run)
    measured = {m.series.name: m for m in curves.measure(data, curves.load("003"))}
    three = measured["3 idle"]
    assert three.platform == "container" and three.test_case == "wrk-max"
    assert [p.x for p in three.points] == [1.0, 70.0]
    findings = {
        r.finding.id: r for r in compute.evaluate(data, load.load("003").findings) if r.ratio
    }
    assert three.points[0].ratio.value == pytest.approx(findings["table2-idle-1kb"].ratio.value)
    assert three.points[1].ratio.low == pytest.approx(findings["table2-idle-70kb"].ratio.low)
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]

    def mean(scenario, size):
        return statistics.fmean(
            r["value"]
            for r in rows
            if r["scenario"] == scenario
            and r["role"] == "target"
            and r["metric"] == "requests_per_s"
            and r["valid"]
            and r["labels"].get("file_size_kb") == size
        )

    for p in three.points:
        size = int(p.x)
        assert p.ratio.value == pytest.approx(mean("idle-neighbours:3", size) / mean("solo", size))
    # 1 and 2 idle guests were not run: no point, and the reason says so
    assert measured["1 idle"].points == () and "idle-neighbours:1" in measured["1 idle"].why


def test_report_draws_the_papers_points_beside_the_measured_curve(tmp_path):
    st, run = _open(tmp_path, "seed003-consolidation-reduced.db.gz")
    section = replication(ReportData.load(st, run))
    page = str(section.html)
    assert 'data-series="here · 3 idle (container)"' in page
    assert 'data-series="paper · 3 idle"' in page
    assert 'data-legend="paper · 3 idle"' in page
    # a series this run did not measure is named, not drawn
    assert 'data-series="paper · 1 idle"' not in page and "Not in this run: 1 idle" in page
    assert "999/1070" in page  # the paper's own numbers beside the chart
    assert "Table 2, 3 idle: 1: 0.934, 70: 0.899 here" in section.markdown
