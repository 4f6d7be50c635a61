"""The latency report section (seed 001 tables and tick plot) from a synthetic store."""

import json

from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.report.suites.latency import latency, us
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.workloads.base import Sample

RUN = "20240101-000000-beef"


def _store(tmp_path) -> Store:
    st = Store.in_dir(tmp_path)
    described = describe(("tick", "thread-switch-2", "thread-switch-1000"))
    st.create_run(
        RUN, "rt", "x.toml", "", 1, {}, {"baseline": "native"}, "0.1.0", description=described
    )
    plan, seq = [], 0
    for platform in ("native", "vm"):
        for scenario in ("solo", "antagonist:cpu-load:same-cpu:quantum=1ms"):
            for tc in ("tick", "thread-switch-2", "thread-switch-1000"):
                for rep in (1, 2):
                    plan.append((seq, platform, scenario, tc, rep))
                    seq += 1
    st.add_cells(
        (
            f"{RUN}/{s:04d}",
            RUN,
            s,
            p,
            json.dumps({"name": p, "type": p}),
            "latency",
            tc,
            sc,
            rep,
            "{}",
        )
        for s, p, sc, tc, rep in plan
    )
    for s, p, _sc, tc, rep in plan:
        base = {"tick": 70.0, "thread-switch-2": 11.0, "thread-switch-1000": 12.0}[tc]
        value = base * (1 if p == "native" else 500) * rep
        samples = [Sample("max_us", value, "us", False), Sample("median_us", base, "us", False)]
        series = []
        if tc == "tick":
            series = [("target", "tick_max_us", t / 10, value, "us") for t in range(5)]
            series += [("target", "tick_head_us", t / 1e4, 65.0, "us") for t in range(5)]
        st.finish_cell(RUN, f"{RUN}/{s:04d}", "ok", samples, series, None, {})
    st.set_run_status(RUN, "finished")
    return st


def test_us_formatting():
    assert us(10.0) == "10.00 µs" and us(30160.0) == "30.16 ms" and us(None) == "–"


def test_tables_per_scenario_with_maxima(tmp_path):
    st = _store(tmp_path)
    sections = latency(ReportData.load(st, RUN))
    assert sections is not None
    html = str(sections[0].html)
    assert "Scenario 1 one-to-all" in html
    assert "Scenario 3 one CPU-load, same CPU, quantum 1ms" in html
    assert "max switch, 1000 threads" in html
    assert "140.0 µs (n=2)" in html  # native tick: max of 70 and 140
    assert "70.00 ms (n=2)" in html  # vm tick: 35 ms and 70 ms
    assert "native" in sections[0].markdown
    assert sections[1].title == "Tick duration over time" and "<svg" in str(sections[1].html)


def test_whole_report_includes_latency(tmp_path):
    st = _store(tmp_path)
    path, _md = build.write(st, RUN, tmp_path)
    assert "Real-time latency (seed 001)" in path.read_text()
