"""Stored runs rendered to HTML and checked in headless Chromium: no cut label, every legend
entry drawn, no empty figure. Screenshots land in the test's tmp dir for humans.

- the golden v1 store (tests/data/runs/v1: suites, co-location, VM lifecycle);
- a reduced co-location run (tests/data/colocation/figrun.db.gz, container target, 1 and
  50 KB, solo, idle-neighbours:1/3, identical, different:50, weights, startup; see
  docs/colocation.md) whose report must carry the figures of seeds 000 and 003.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from virtbench.report import build
from virtbench.store.db import Store

from .figure_check import (
    LAYOUT_WIDTHS,
    assert_figures_ok,
    assert_layout_ok,
    available,
    check_html,
    only_sections,
)

pytestmark = [
    pytest.mark.figures,
    pytest.mark.skipif(not available(), reason="needs /usr/bin/chromium"),
]

DATA = Path(__file__).parents[1] / "data"
GOLDEN = DATA / "runs" / "v1" / "virtbench.db"
FIGRUN = DATA / "colocation" / "figrun.db.gz"


def _store(tmp_path: Path, db: Path) -> Store:
    if db.suffix == ".gz":
        with gzip.open(db) as src, open(tmp_path / "virtbench.db", "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        shutil.copy(db, tmp_path / "virtbench.db")
    return Store.open_existing(tmp_path)


def test_golden_reports_have_sound_figures(tmp_path):
    store = _store(tmp_path, GOLDEN)
    for run in store.runs():
        page, _md = build.render(store, run["run_id"])
        report = check_html(page, tmp_path / f"{run['run_id']}.png")
        assert report.figures, run["run_id"]
        assert_figures_ok(report)


@pytest.mark.skipif(not FIGRUN.exists(), reason="no stored co-location run")
def test_colocation_run_draws_the_papers_figures(tmp_path):
    store = _store(tmp_path, FIGRUN)
    (run,) = store.runs()
    page, _md = build.render(store, run["run_id"])
    report = check_html(page, tmp_path / "colocation.png")
    assert_figures_ok(report)
    titles = [f["title"] for f in report.figures]

    def some(text: str) -> list[dict]:
        return [f for f in report.figures if text in f["title"]]

    # throughput vs offered rate per file size, never pooled; the fall drawn, marked
    for size in (1, 50):
        assert some(f"server throughput vs offered rate, {size} KB files"), titles
        assert some(f"target throughput per scenario, {size} KB files"), titles
    assert 'data-invalid="' in page
    # every environment beside the target, and their sum (seed 000 Figs. 4-6)
    pair = some("identical: throughput per environment, target 1 KB")[0]
    assert {"target", "neighbour-1"} <= set(pair["legend"])
    # idle neighbours 0..3 per size (seed 003 Table 2)
    idle = some("peak throughput with idle neighbours")[0]
    assert idle["legend"] == ["0 idle", "1 idle", "3 idle"]
    # CPU / blocked / waiting and µs/exe, exe/s per step, for every role (Table 4, Figs 1-10)
    for what in ("CPU utilization", "blocked time", "waiting time", "executions per second"):
        for family in ("solo and idle neighbours", "busy neighbours"):
            chart = some(f"{what} vs rate, 1 KB files ({family}")[0]
            assert "solo · target" in chart["legend"], chart
            assert any("neighbour" in name for name in chart["legend"]), chart
    # reply/transfer degradation table (Table 3), CoV of every role (Figs. 11-12)
    assert "seed 003 Table 3" in page
    assert any("neighbour-1" in f["legend"] for f in some("coefficient of variation"))
    # the start-up chart names every newcomer
    (start,) = some("startup:2:container")
    assert sum(name.startswith("neighbour-") for name in start["legend"]) == 2
    # a sweeping target is divided by the rate offered at each step (seed 003 Fig. 14)
    assert "target reply_rate.1KB ÷ the offered rate at each step" in start["legend"]


REPLICATION = DATA / "replication" / "seed003-consolidation-reduced.db.gz"


@pytest.mark.parametrize("width", LAYOUT_WIDTHS)
def test_replication_section_draws_the_papers_points(tmp_path, width):
    """Seed 003's stored reduced run: the replication section's chart sets Table 2's points
    (dashed) beside the measured ratios, every legend entry drawn, readable at both widths."""
    store = _store(tmp_path, REPLICATION)
    (run,) = store.runs()
    page, _md = build.render(store, run["run_id"])
    section = only_sections(page, ["replication-of-seed-003"])
    report = check_html(section, tmp_path / f"replication-{width}.png", width=width)
    assert_figures_ok(report)
    assert_layout_ok(report)
    (chart,) = [f for f in report.figures if f["title"].startswith("Table 2:")]
    assert chart["legend"] == ["here · 3 idle (container)", "paper · 3 idle"], chart
