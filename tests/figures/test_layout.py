"""Reports that read from a small laptop to a desktop window (issue 39 item 3): rendered in
headless Chromium at 1,024 and 1,400 px, no element reaches past the window outside a scroll
box, no table cell's text is clipped or squeezed to a sliver, numbers are right-aligned.

The pages: a run report (the golden v1 suites run: cpu, memory, disk, network, ...), a
co-location report (tests/data/colocation/figrun.db.gz) and a `compare --html` page (two
platforms of the golden suites run). Run under the machine lock (`flock
/tmp/vb-measure.lock`): Chromium is heavy on a 2-core host. Screenshots land in tmp_path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.cli import cli
from virtbench.report import build

from .figure_check import LAYOUT_WIDTHS, assert_layout_ok, available, check_html
from .test_stored_reports import FIGRUN, GOLDEN, _store

pytestmark = [
    pytest.mark.figures,
    pytest.mark.skipif(not available(), reason="needs /usr/bin/chromium"),
]

SUITES_RUN = "20261123-200639-9740"  # the golden v1 run of every solo suite


def _run_report(tmp_path: Path) -> str:
    page, _md = build.render(_store(tmp_path, GOLDEN), SUITES_RUN)
    return page


def _colocation_report(tmp_path: Path) -> str:
    store = _store(tmp_path, FIGRUN)
    (run,) = store.runs()
    page, _md = build.render(store, run["run_id"])
    return page


def _compare_page(tmp_path: Path) -> str:
    _store(tmp_path, GOLDEN)
    out = tmp_path / "compare.html"
    args = [SUITES_RUN, "--platforms", "native", "container", "--results-dir", str(tmp_path)]
    done = CliRunner().invoke(cli, ["compare", *args, "--html", str(out)])
    assert done.exit_code == 0, done.output
    return out.read_text()


PAGES = {"run": _run_report, "colocation": _colocation_report, "compare": _compare_page}


@pytest.mark.parametrize("width", LAYOUT_WIDTHS)
@pytest.mark.parametrize("kind", sorted(PAGES))
def test_page_reads_at_width(tmp_path: Path, kind: str, width: int) -> None:
    if kind == "colocation" and not FIGRUN.exists():
        pytest.skip("no stored co-location run")
    page = PAGES[kind](tmp_path)
    report = check_html(page, tmp_path / f"{kind}-{width}.png", width=width)
    assert_layout_ok(report)
    if kind == "compare":
        # the whole verdict table fits a 1,024 px window: verdicts and their reasons in view
        assert not report.scrolled, report.text()
