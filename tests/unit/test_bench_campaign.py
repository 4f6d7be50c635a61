"""bench/_campaign.py, the bench scripts' shared reading and paired-ratio helpers, against a
store with the real schema (two runs: only the latest is read)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from virtbench.analysis.stats import summarize
from virtbench.results import Sample
from virtbench.runner.describe import describe
from virtbench.store.db import Store

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # last: shadows nothing
import _campaign as bench  # noqa: E402
import sum_pieces  # noqa: E402

from virtbench.errors import VirtbenchError  # noqa: E402

OLD, NEW = "20260101-000000-0old", "20260101-000100-0new"


def _run(st: Store, run_id: str, started: float, cells: list[tuple]) -> None:
    """cells: (platform, scenario, rep, status, started_at, finished_at, samples)."""
    st.create_run(run_id, "c", "c.toml", "", 1, {}, {}, "0", description=describe(["mbw"]))
    rows = [
        (f"{run_id}/{i:03d}", run_id, i, p, "{}", "memory", "mbw", scen, rep, "{}")
        for i, (p, scen, rep, *_rest) in enumerate(cells)
    ]
    st.add_cells(rows)
    for i, (*_head, status, t0, t1, samples) in enumerate(cells):
        cid = f"{run_id}/{i:03d}"
        if samples is not None:
            st.finish_cell(run_id, cid, status, samples, [])
        with st.tx() as c:
            c.execute(
                "UPDATE cells SET status = ?, started_at = ?, finished_at = ? WHERE cell_id = ?",
                (status, t0, t1, cid),
            )
    with st.tx() as c:
        c.execute(
            "UPDATE runs SET started_at = ?, finished_at = ?, status = 'finished' WHERE run_id = ?",
            (started, started + 60.0, run_id),
        )


def _mbw(value: float, invalid: str | None = None, role: str = "target") -> Sample:
    labels = {"method": "memcpy"} | ({"invalid": invalid} if invalid else {})
    return Sample("bandwidth_mib_s", value, "MiB/s", True, labels=labels, role=role)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    st = Store.in_dir(tmp_path)
    _run(st, OLD, 1000.0, [("native", "solo", 1, "ok", 1000.0, 1009.0, [_mbw(1.0)])])
    _run(
        st,
        NEW,
        2000.0,  # started later: the latest run, though listed second
        [
            ("native", "solo", 1, "ok", 2000.0, 2002.5, [_mbw(7.0, "stalled"), _mbw(9.0)]),
            ("container", "solo", 1, "ok", 2003.0, 2004.0, [_mbw(5.0, role="host")]),
            ("native", "solo", 2, "failed", 2005.0, None, None),  # never finished
        ],
    )
    st.close()
    return tmp_path


def test_cell_times_are_the_latest_runs_cells_in_order(results: Path):
    cells = bench.cell_times(results)
    assert [(c.platform, c.repetition, c.status) for c in cells] == [
        ("native", 1, "ok"),
        ("container", 1, "ok"),
        ("native", 2, "failed"),
    ]
    assert [c.seconds for c in cells] == [2.5, 1.0, None]  # no finish: no time, not 0
    assert bench.cell_times(results / "nothing-here") == []


def test_a_piece_is_the_latest_runs_finished_cells_and_wall(results: Path):
    piece = sum_pieces.read_piece(results)
    assert (piece.run_id, piece.wall) == (NEW, 60.0)
    assert [(s.platform, s.seconds) for s in piece.spans] == [("native", 2.5), ("container", 1.0)]
    with pytest.raises(VirtbenchError, match="nothing-here: no run stored"):
        sum_pieces.read_piece(results / "nothing-here")


def test_run_span_is_the_latest_runs(results: Path):
    assert bench.run_span(results / "virtbench.db") == (2000.0, 2060.0)


def test_metric_rows_and_one_value(results: Path):
    st = Store.open_existing(results)
    try:
        rows = bench.metric_rows(st, NEW, "bandwidth_mib_s")
        assert [(r["platform"], r["value"], r["valid"]) for r in rows] == [
            ("native", 7.0, 0),
            ("native", 9.0, 1),
        ]  # the host-role sample is not the workload's figure
        assert [r["value"] for r in bench.metric_rows(st, NEW, "bandwidth_mib_s", "host")] == [5.0]
        assert bench.one_value(st, NEW, "bandwidth_mib_s") == 9.0  # the first valid one
        assert bench.one_value(st, NEW, "bandwidth_mib_s", valid_only=False) == 7.0
        with pytest.raises(RuntimeError, match=f"run {NEW} stored no valid latency"):
            bench.one_value(st, NEW, "latency")
    finally:
        st.close()


def test_paired_ratio_is_stats_summary_of_per_round_ratios():
    num, den = [102.0, 99.0, 101.0], [100.0, 100.0, 100.0]
    assert bench.ratios(num, den) == [1.02, 0.99, 1.01]
    s = bench.paired_ratio(num, den)
    assert s == summarize([1.02, 0.99, 1.01])
    assert (s.n, s.minimum, s.maximum) == (3, 0.99, 1.02)
    # t(0.975, 2) = 4.303: half width 4.303 * sd / sqrt(3)
    sd = math.sqrt(((0.0133333) ** 2 + (0.0166667) ** 2 + (0.0033333) ** 2) / 2)
    assert s.ci_low == pytest.approx(s.mean - 4.3027 * sd / math.sqrt(3), rel=1e-4)
    with pytest.raises(ValueError):  # unpaired lists are a bug, not a shorter ratio
        bench.paired_ratio([1.0, 2.0], [1.0])


def test_cv_pct():
    assert bench.cv_pct([9.0, 10.0, 11.0]) == pytest.approx(10.0)
    assert math.isnan(bench.cv_pct([5.0])) and math.isnan(bench.cv_pct([]))


def test_a_piece_can_be_interrupted_even_when_started_in_the_background():
    """A shell starts `cmd &` with SIGINT ignored; the child inherited it and the piece's
    SIGINT did nothing. The child is started with SIGINT at its default."""
    import signal
    import subprocess

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job has it
    try:
        probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
        out = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            preexec_fn=bench._sigint_default,
            check=True,
        )
    finally:
        signal.signal(signal.SIGINT, old)
    assert out.stdout.strip() == "False"


def test_sigterm_to_a_piece_reaches_its_run_as_sigint_and_waits_for_it(tmp_path: Path):
    """Killed alone, the bench script left its run measuring on without the machine lock."""
    import signal
    import subprocess
    import time

    marker = tmp_path / "got"
    child = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    time.sleep(0.5)  # a teardown\n"
        f"    open({str(marker)!r}, 'w').write('SIGINT')\n"
        "    sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    script = (
        f"import sys; sys.path.append({str(Path(bench.__file__).parent)!r})\n"
        "import _campaign\n"
        f"out = _campaign.run_child([sys.executable, '-c', {child!r}])\n"
        "print(out.returncode, out.stdout.strip())\n"
    )
    outer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)  # both interpreters started and the child's handler set
    outer.send_signal(signal.SIGTERM)
    stdout, _ = outer.communicate(timeout=20)
    assert marker.read_text() == "SIGINT"  # the run got Ctrl-C's signal, not a kill
    assert stdout.split() == ["130", "ready"]  # and the script waited for it to end
