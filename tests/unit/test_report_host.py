"""The report's Host section (issue 39): folded under its one-line summary, below the
results, and listing the versions of the tools the run used, not of every tool on the host."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

from virtbench.report import build
from virtbench.store.db import Store

DATA = Path(__file__).parents[1] / "data"
GOLDEN = DATA / "runs" / "v1" / "virtbench.db"  # stored before tools_used was recorded
FIGRUN = DATA / "colocation" / "figrun.db.gz"  # httperf-sweep on container: tools_used kept


def _host(tmp_path: Path, db: Path) -> str:
    if db.suffix == ".gz":
        with gzip.open(db) as src, open(tmp_path / "virtbench.db", "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        shutil.copy(db, tmp_path / "virtbench.db")
    store = Store.open_existing(tmp_path)
    page, _md = build.render(store, store.runs()[0]["run_id"])
    return page[page.index('<section id="host">') :].split("</section>")[0]


def _tools(host: str) -> list[str]:
    versions = host[host.index("Tool versions") :]
    return re.findall(r'<td class="name">([^<]+)</td>', versions)


def test_only_the_tools_the_run_used(tmp_path: Path) -> None:
    host = _host(tmp_path, FIGRUN)
    # httperf-sweep's tools, and the runtime of its container platform; not the 28 the
    # host had (qemu, jmeter, fio, ...)
    assert _tools(host) == ["crun", "httperf", "nginx", "wrk"]
    assert "the tools this run" in host
    assert "allowed: 0–1" in host  # CPU numbers as ranges, never a Python list


def test_folded_and_says_when_it_lists_every_tool(tmp_path: Path) -> None:
    host = _host(tmp_path, GOLDEN)
    assert host.index("<details><summary>") < host.index("<table")
    assert "did not record which tools it used" in host
    assert len(_tools(host)) == 24
