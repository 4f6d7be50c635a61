"""The time-series section: one line per cell, never two cells' points joined into one."""

import re

from virtbench.report.core.series import time_series
from virtbench.report.data import ReportData
from virtbench.results import PEAK_LIMIT_LABEL, SOLO_PEAK_SCENARIO
from virtbench.runner.describe import describe
from virtbench.store.db import Store

RUN = "20240101-000000-abcd"


def test_solo_peaks_of_two_sizes_or_limits_are_lines_of_their_own_named_by_them(tmp_path):
    """A lockstep sweep measures one solo peak per file size: cells of the same platform,
    test case, scenario (solo-peak) and repetition (1), told apart by their params. Keyed by
    (platform, repetition) their points were one line, zigzagging between the cells; so was
    a peak measured again under a CPU budget (peak_cpu_limit)."""
    st = Store.in_dir(tmp_path)
    tc = "httperf-sweep"
    st.create_run(RUN, "web", "web.toml", "", 1, {}, {}, "0.1.0", description=describe([tc]))
    sizes = {0: 1, 1: 70, 2: 1}
    limits = {0: "", 1: "", 2: "cpu quota 50000"}  # the 1 KB peak again, under a CPU budget
    st.add_cells(
        (f"{RUN}/{i:04d}", RUN, i, "native", "{}", "web", tc, SOLO_PEAK_SCENARIO, 1, "{}")
        for i in sizes
    )
    for i, size in sizes.items():
        series = [("target", "cpu_util", float(t), 10.0 * (i + 1), "%") for t in range(5)]
        labels = {"params": {"file_size_kb": [size], "connections": 32}}
        labels[PEAK_LIMIT_LABEL] = limits[i]  # what peaks.py stores with each peak cell
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", [], series, None, labels)
    st.set_run_status(RUN, "finished")
    sec = time_series(ReportData.load(st, RUN))
    assert sec is not None
    html = str(sec.html)
    drawn = {
        name: d for d, name in re.findall(r'<path d="(M[^"]*)"[^>]*data-series="([^"]*)"', html)
    }
    assert len(drawn) == 3, drawn.keys()
    for d in drawn.values():  # each line is one cell's five points at one value
        ys = {p.split()[1] for p in d[1:].split("L")}
        assert d.count("L") == 4 and len(ys) == 1
    names = " | ".join(sorted(drawn))
    assert "file_size_kb=1" in names and "file_size_kb=70" in names, names
    assert "cpu quota 50000" in names, names
    st.close()
