"""Numeric-dimension curves (report/core/curves.py): matrix order and multicore threads."""

from __future__ import annotations

from virtbench.report import build
from virtbench.report.core.curves import _axes
from virtbench.report.svg import Line
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.workloads.base import Sample

RUN = "20240101-000000-curv"
PEAK = {"native": 4.0, "crun-nat": 3.8, "vm": 0.09, "crun-in-vm": 0.08}


def _line(name: str, peak: float) -> Line:
    return Line(name, "#000", [(1.0, peak / 2, None, None), (2.0, peak, None, None)])


def test_axes_split_only_where_platforms_are_tenfold_apart():
    lines = [_line(n, v) for n, v in PEAK.items()]
    parts = _axes("t", lines)
    assert [[ln.name for ln in g] for _, g in parts] == [
        ["native", "crun-nat"],
        ["vm", "crun-in-vm"],
    ]
    assert parts[1][0] == "t · vm, crun-in-vm (own axis: 10x apart)"
    # 7x apart: one chart; a chain 1 -> 8 -> 64 is cut at its widest gap
    assert len(_axes("t", [_line("a", 1.0), _line("b", 7.0)])) == 1
    chain = _axes("t", [_line("a", 1.0), _line("b", 1.5), _line("c", 12.0), _line("d", 100.0)])
    assert [[ln.name for ln in g] for _, g in chain] == [["d"], ["c"], ["a", "b"]]


def test_order_and_thread_curves_in_the_report(tmp_path):
    st = Store.in_dir(tmp_path)
    cases = ("hpcc-linpack-sweep", "multicore-sysbench-cpu")
    st.create_run(
        RUN, "c", "x.toml", "", 1, {}, {"baseline": "native"}, "0", description=describe(cases)
    )
    cells, plan, seq = [], [], 0
    for platform in PEAK:
        for tc, suite in (("hpcc-linpack-sweep", "cpu"), ("multicore-sysbench-cpu", "multicore")):
            for rep in (1, 2, 3):
                cells.append(
                    (f"{RUN}/{seq:04d}", RUN, seq, platform, "{}", suite, tc, "solo", rep, "{}")
                )
                plan.append((seq, platform, tc, rep))
                seq += 1
    st.add_cells(cells)
    for seq, platform, tc, rep in plan:
        f = PEAK[platform] * (1 + rep / 100)
        if tc == "hpcc-linpack-sweep":
            samples = [
                Sample(
                    "hpl_gflops",
                    f * n / 2000,
                    "GFLOPS",
                    True,
                    labels={"order": n, "hpl_time_s": rep},
                )
                for n in (500, 1000, 2000)
            ]
        else:
            samples = [
                Sample("events_per_s", 300 * f * min(t, 2), "events/s", True, labels={"threads": t})
                for t in (1, 2, 4)
            ]
        st.finish_cell(RUN, f"{RUN}/{seq:04d}", "ok", samples, [], None, {})
    st.set_run_status(RUN, "finished")
    text = build.write(st, RUN, tmp_path)[0].read_text()
    st.close()
    assert "Matrix-order curves" in text and "Multicore scaling curves" in text
    assert "hpl_gflops vs matrix order N · solo · native, crun-nat (own axis: 10x apart)" in text
    assert "events_per_s vs threads · solo · vm, crun-in-vm (own axis: 10x apart)" in text
    assert "vm: 2,000 → " in text  # one line per platform, a point per order
    assert "hpl_time_s=" not in text  # ignored: never a dimension, though it differs per order
