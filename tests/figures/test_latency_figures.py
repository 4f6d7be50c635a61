"""The seed 001 latency figures (tick duration and switch latency over time, every scenario)
rendered in headless Chromium: no cut label, every legend entry drawn, no empty chart."""

from __future__ import annotations

import pytest

from tests.unit.test_latency_report import RUN, _full_store
from virtbench.report import build

from .figure_check import assert_figures_ok, available, check_html

pytestmark = [
    pytest.mark.figures,
    pytest.mark.skipif(not available(), reason="needs /usr/bin/chromium"),
]


def test_latency_figures_of_every_scenario_render_whole(tmp_path):
    store = _full_store(tmp_path)
    html, _md = build.render(store, RUN)
    report = check_html(html, screenshot=tmp_path / "latency.png")
    titles = " ".join(f["title"] for f in report.figures)
    assert "tick" in titles.lower() and "switch" in titles.lower()
    assert len(report.figures) >= 7  # every scenario has its charts, not the first six
    assert_figures_ok(report)
