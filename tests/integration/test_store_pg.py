"""The PostgreSQL store against a real server: a throwaway cluster (Debian's PostgreSQL 15)
that this module starts in a temp dir, on a unix socket only, and stops at the end.

Schema creation by 8 hosts at once, the golden v1 SQLite import and its byte-identical
export, report and compare Markdown as from SQLite, 8 concurrent writers, bad URLs, and a
store that goes away mid-run (the cells go to the local fallback file; import completes it).
"""

from __future__ import annotations

import multiprocessing
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import pgserver
from virtbench.cli import cli
from virtbench.results import Sample
from virtbench.store import schema
from virtbench.store.backend import StoreUnavailable
from virtbench.store.db import DB_NAME, Store
from virtbench.store.description import RunDescription
from virtbench.store.fallback import FallbackStore

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).parents[1] / "data" / "runs" / "v1"
RUNS = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))
SUITES_RUN = "20261123-200639-9740"
WRITERS, CELLS_EACH, SAMPLES_EACH = 8, 25, 10
RUN = "20250101-000000-beef"


@pytest.fixture(scope="module")
def pg() -> Iterator[pgserver.Cluster]:
    why = pgserver.available()
    if why:
        pytest.skip(why)
    with pgserver.cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def golden_pg(pg) -> str:
    """The golden v1 runs imported into a fresh database."""
    url = pg.create_db("golden")
    out = _cli("import", str(GOLDEN / DB_NAME), "--store", url)
    assert out.count(": imported (") == len(RUNS)
    return url


@pytest.fixture(scope="module")
def golden_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("golden-sqlite")
    shutil.copy(GOLDEN / DB_NAME, d / DB_NAME)
    return d


def _cli(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args))
    assert out.exit_code == 0, (out.output, out.exception)
    return out.output


def _open(url: str) -> int:
    st = Store(url)
    (version,) = st.conn.execute("SELECT version FROM schema_version").fetchone()
    st.close()
    return version


def test_eight_hosts_creating_a_fresh_store_at_once(pg):
    url = pg.create_db("fresh")
    with multiprocessing.get_context("fork").Pool(8) as pool:
        versions = pool.map(_open, [url] * 8)
    assert versions == [schema.CURRENT] * 8
    st = Store(url)
    assert st.conn.execute("SELECT COUNT(*) FROM schema_version").fetchone() == (1,)
    assert {"runs", "cells", "samples", "series", "run_metrics"} <= st.conn.tables()
    st.close()


def test_golden_import_exports_byte_identically_and_twice_changes_nothing(golden_pg, golden_dir):
    again = _cli("import", str(GOLDEN / DB_NAME), "--store", golden_pg)
    assert again.count(", skipped") == len(RUNS)
    for run_id in RUNS:
        for fmt in ("jsonl", "csv"):
            text = _cli("results", "--run", run_id, "--format", fmt, "--store", golden_pg)
            # jsonl is the v1 file byte for byte; csv has a column per dimension since, and
            # must be what the SQLite store gives (test_golden_v1 checks its v1 columns)
            lite = _cli(
                "results", "--run", run_id, "--format", fmt, "--results-dir", str(golden_dir)
            )
            assert text == lite, (run_id, fmt)
            if fmt == "jsonl":
                assert text == (GOLDEN / f"{run_id}.{fmt}").read_text(), run_id
    st = Store(golden_pg)
    (n,) = st.conn.execute("SELECT COUNT(*) FROM samples").fetchone()
    assert n == sum(len((GOLDEN / f"{r}.jsonl").read_text().splitlines()) for r in RUNS)
    st.close()


def test_report_markdown_is_the_sqlite_one(golden_pg, tmp_path):
    for run_id in RUNS:
        text = _cli("report", run_id, "--store", golden_pg, "--results-dir", str(tmp_path))
        assert text.rpartition("HTML report: ")[0] == (GOLDEN / f"{run_id}.md").read_text()


def _unstored(markdown: str) -> str:
    """Compare pages name where each run is stored; that line alone differs."""
    return re.sub(r" in (postgresql://\S+|/\S+)", " in STORE", markdown)


def test_compare_markdown_is_the_sqlite_one(golden_pg, golden_dir):
    two = ["--platforms", "native", "container"]
    lite = _cli("compare", SUITES_RUN, *two, "--results-dir", str(golden_dir))
    pg = _cli("compare", SUITES_RUN, *two, "--store", golden_pg)
    assert _unstored(pg) == _unstored(lite)
    # the same run from both back ends: one side each
    lite = _cli("compare", SUITES_RUN, SUITES_RUN, "--results-dir", str(golden_dir),
                "--store-b", str(golden_dir))  # fmt: skip
    mixed = _cli("compare", SUITES_RUN, SUITES_RUN, "--store", golden_pg,
                 "--store-b", str(golden_dir))  # fmt: skip
    assert _unstored(mixed) == _unstored(lite)


def _writer(url: str, worker: int) -> int:
    st = Store(url)
    for i in range(CELLS_EACH):
        cid = f"{RUN}/{worker * CELLS_EACH + i:04d}"
        st.start_cell(cid)
        samples = [Sample("ops", float(k), "ops/s", True) for k in range(SAMPLES_EACH)]
        series = [("target", "cpu", float(t), 1.0, "%") for t in range(5)]
        st.finish_cell(RUN, cid, "ok", samples, series, labels={"worker": worker})
    st.close()
    return worker


def test_eight_concurrent_writers_lose_and_duplicate_nothing(pg):
    url = pg.create_db("writers")
    st = Store(url)
    st.create_run(RUN, "w", "", "", None, {}, {}, "0", description=RunDescription())
    n = WRITERS * CELLS_EACH
    st.add_cells((f"{RUN}/{i:04d}", RUN, i, "native", "{}", "cpu", "t", "solo", 1, "{}")
                 for i in range(n))  # fmt: skip
    with multiprocessing.get_context("fork").Pool(WRITERS) as pool:
        assert sorted(pool.starmap(_writer, [(url, w) for w in range(WRITERS)])) == list(
            range(WRITERS)
        )
    assert [c.status for c in st.cells(RUN)] == ["ok"] * n
    rows = st.conn.execute(
        "SELECT cell_id, COUNT(*), COUNT(DISTINCT value) FROM samples GROUP BY cell_id"
    ).fetchall()
    assert len(rows) == n and {r[1:] for r in rows} == {(SAMPLES_EACH, SAMPLES_EACH)}
    (points,) = st.conn.execute("SELECT COUNT(*) FROM series").fetchone()
    assert points == n * 5
    st.close()


def test_bad_urls_name_the_store_and_what_failed(pg):
    out = CliRunner().invoke(cli, ["results", "--list", "--store", pg.url("nope")])
    assert out.exit_code != 0
    assert "cannot connect to results store postgresql://postgres@/nope" in str(out.exception)
    assert 'database "nope" does not exist' in str(out.exception)
    url = pg.url("postgres").replace("postgres@", "vb:s3cret@")
    out = CliRunner().invoke(cli, ["results", "--list", "--store", url])
    assert "vb:***@" in str(out.exception) and "s3cret" not in str(out.exception)


def test_store_going_away_mid_run_loses_nothing(pg, tmp_path):
    url = pg.create_db("goes_away")
    warnings: list[str] = []
    st = FallbackStore(Store(url), tmp_path, warnings.append)
    st.create_run(RUN, "r", "", "", None, {}, {}, "0", description=RunDescription())
    st.add_cells((f"{RUN}/{i:04d}", RUN, i, "native", "{}", "cpu", "t", "solo", 1, "{}")
                 for i in range(4))  # fmt: skip
    try:
        for i in range(4):
            if i == 2:
                pg.stop()
            st.start_cell(f"{RUN}/{i:04d}")
            st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", [Sample("ops", i, "ops/s", True)], [])
        st.set_run_status(RUN, "finished")
    finally:
        pg.start()
    local = tmp_path / f"fallback-{RUN}.db"
    assert "went away" in warnings[0] and str(local) in warnings[0]
    assert f"virtbench import {local} --store '{pg.url('goes_away')}'" in st.note
    with pytest.raises(StoreUnavailable):
        st.primary.cells(RUN)  # that connection is gone for good
    text = _cli("import", str(local), "--store", url)
    assert "added 2 cells finished in the file" in text
    assert ", skipped" in _cli("import", str(local), "--store", url)
    back = Store(url)
    assert [c.status for c in back.cells(RUN)] == ["ok"] * 4
    assert [r["value"] for r in back.sample_rows(RUN)] == [0.0, 1.0, 2.0, 3.0]
    assert back.run(RUN)["status"] == "finished"
    back.close()
