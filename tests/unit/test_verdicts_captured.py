"""Verdicts on captured real runs where the truth is known (tests/data/verdicts): an A/A
copy of native and a crun container on CPU and memory, under an invisible tenant's bursts
and without. Nothing may be called faster or slower."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from virtbench.analysis import groups as groups_mod
from virtbench.analysis import ratios, scores
from virtbench.analysis.normalize import against_baseline
from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.store.db import Store

DATA = Path(__file__).parent.parent / "data" / "verdicts"
WRONG = {ratios.FASTER, ratios.SLOWER}


def _open(tmp_path: Path, name: str) -> tuple[Store, str]:
    db = tmp_path / "virtbench.db"
    with gzip.open(DATA / name) as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    st = Store(db)
    return st, st.runs()[0]["run_id"]


def _calls(data: ReportData) -> set[str]:
    out = {c.decision for k, c in data.comparisons.items() if k.platform != "native"}
    return out | {g.decision for g in data.geomeans}


@pytest.mark.parametrize("name", ["fpr-seed-1.db.gz", "fpr-quiet.db.gz"])
def test_no_false_call_in_the_report(tmp_path, name):
    st, run = _open(tmp_path, name)
    data = ReportData.load(st, run)
    assert not _calls(data) & WRONG
    st.close()


def test_a_burst_run_says_so_first_and_decides_nothing(tmp_path):
    st, run = _open(tmp_path, "fpr-seed-1.db.gz")
    _html, md = build.render(st, run)
    first = md.splitlines()[0]
    assert first.startswith("DISTURBED") and "cells" in first
    data = ReportData.load(st, run)
    assert data.geomeans == [] or all(g.value is None for g in data.geomeans)
    st.close()


def test_its_disturbed_samples_kept_still_call_nothing(tmp_path):
    """As `disturbed = "keep"` would: every sample counted. Its crun memory score is 0.941
    [0.920-0.962] over rounds (the burst hit the container's memory cells more often), but
    none of its six test cases is slower alone: the score is not called."""
    st, run = _open(tmp_path, "fpr-seed-1.db.gz")
    rows = [{**r, "valid": 1} if (r.get("invalid_reason") or "").startswith("disturbed") else r
            for r in st.sample_rows(run)]  # fmt: skip
    gs = groups_mod.build(rows, st.description(run))
    comps = against_baseline(gs, "native")
    geo = {(g.platform, g.suite): g for g in scores.geomeans(gs, comps, "native")}
    memory = geo[("container", "memory")]
    assert memory.high is not None and memory.high < 0.98
    assert memory.decision == ratios.UNDECIDED and "no test case" in memory.verdict.reason
    assert not {g.decision for g in geo.values()} & WRONG
    assert not {c.decision for k, c in comps.items() if k.platform != "native"} & WRONG
    st.close()


def test_the_quiet_run_calls_same_with_its_measured_floor_said(tmp_path):
    st, run = _open(tmp_path, "fpr-quiet.db.gz")
    data = ReportData.load(st, run)
    by = {(g.platform, g.suite): g for g in data.geomeans}
    memory = by[("container", "memory")]
    assert memory.decision == ratios.SAME and "A/A" in memory.verdict.floor_source
    assert by[("native-aa", "cpu")].decision == ratios.SAME  # the A/A copy: default floor
    _html, md = build.render(st, run)
    line = next(x for x in md.splitlines() if x.startswith("- container"))
    assert "same as native on memory" in line and "from A/A" in line
    st.close()
