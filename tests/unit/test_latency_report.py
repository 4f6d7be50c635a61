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


SCENARIOS = (
    "solo",
    "pinned",
    "antagonist:cpu-load:same-cpu:compete=rr",
    "antagonist:cpu-load:same-cpu:compete=rr:quantum=30ms",
    "antagonist:cpu-load:same-cpu:compete=rr:quantum=1ms",
    "antagonist:memory-load:same-cpu:compete=rr",
    "antagonist:cpu-load:free:3",
    "antagonist:memory-load:free:3",
    "antagonist:memory-load:free:1",
)


def _full_store(tmp_path) -> Store:
    """Every seed 001 scenario, tick and both switch counts, with the throttling metrics and
    the series the probes record."""
    st = Store.in_dir(tmp_path)
    described = describe(("tick", "thread-switch-2", "thread-switch-1000"))
    st.create_run(
        RUN, "rt", "x.toml", "", 1, {}, {"baseline": "native"}, "0.1.0", description=described
    )
    plan = [
        (i, p, sc, tc)
        for i, (p, sc, tc) in enumerate(
            (p, sc, tc)
            for p in ("native", "container")
            for sc in SCENARIOS
            for tc in ("tick", "thread-switch-2", "thread-switch-1000")
        )
    ]
    st.add_cells(
        (
            f"{RUN}/{i:04d}",
            RUN,
            i,
            p,
            json.dumps({"name": p, "type": p}),
            "latency",
            tc,
            sc,
            1,
            "{}",
        )
        for i, p, sc, tc in plan
    )
    for i, _p, _sc, tc in plan:
        samples = [
            Sample("max_us", 900.0, "us", False),
            Sample("p9999_us", 300.0, "us", False),
            Sample("p999_us", 120.0, "us", False),
            Sample("raw_max_us", 50900.0, "us", False),
            Sample("rt_throttle_windows", 3, "count", False),
            Sample("rt_throttle_total_ms", 150.0, "ms", False),
            Sample("rt_throttle_max_us", 50000.0, "us", False),
        ]
        metric = {"tick": "tick_max_us", "thread-switch-2": "switch2_max_us"}.get(
            tc, "switch1000_max_us"
        )
        series = [("target", metric, t / 100, 70.0 + t, "us") for t in range(300)]
        if tc == "tick":
            samples.append(Sample("tick_delay_us", 8.0, "us", False))
            series += [("target", "tick_head_us", t / 1e4, 65.0, "us") for t in range(50)]
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", samples, series, None, {})
    st.set_run_status(RUN, "finished")
    return st


def test_every_scenario_gets_its_charts_and_throttling_row(tmp_path):
    from html.parser import HTMLParser

    sections = latency(ReportData.load(_full_store(tmp_path), RUN))
    tables, tick, switch = sections
    assert tick.title == "Tick duration over time"
    assert switch.title == "Thread switch latency over time"

    class Count(HTMLParser):
        def __init__(self):
            super().__init__()
            self.h3, self.svg = [], 0

        def handle_starttag(self, tag, attrs):
            self.svg += tag == "svg"

        def handle_data(self, data):
            if self.lasttag == "h3" and data.strip():
                self.h3.append(data)

    for section, per_scenario in ((tick, 2), (switch, 2)):
        c = Count()
        c.feed(str(section.html))
        assert len(c.h3) == len(SCENARIOS)  # every scenario, not the first six
        assert c.svg == per_scenario * len(SCENARIOS)
    html = str(tables.html)
    assert "Scenario 3 one CPU-load, same CPU, competition rr, quantum 1ms" in html
    assert "native: RT throttling windows" in html and "3 / run, 150.0 ms" in html
    assert (
        "tick duration p99.99" in html
        and "tick delay (2nd mode − main)" in html
        and "switch, 2 threads p99.9" in html
    )


def test_latency_runs_have_no_scores(tmp_path):
    data = ReportData.load(_full_store(tmp_path), RUN)
    assert not data.description.scoring_of("latency").scored
    assert data.geomeans == [] and data.seed004 == []
    html, _md = build.render(data.store, RUN)
    assert "Geometric mean" not in html and "Seed 004 scores" not in html


def test_split_budget_and_ambiguous_stalls_are_noted_under_the_table(tmp_path):
    st = Store.in_dir(tmp_path)
    st.create_run(
        RUN,
        "rt",
        "x.toml",
        "",
        1,
        {},
        {"baseline": "native"},
        "0.1.0",
        description=describe(("tick",)),
    )
    sc = "antagonist:cpu-load:same-cpu:compete=rr:quantum=1ms"
    cells = [(0, "native"), (1, "container")]
    st.add_cells(
        (
            f"{RUN}/{i:04d}",
            RUN,
            i,
            p,
            json.dumps({"name": p, "type": p}),
            "latency",
            "tick",
            sc,
            1,
            "{}",
        )
        for i, p in cells
    )
    split = {
        "rt_budget_split": 2,
        "rt_budget_us": 4749,
        "rt_budget_period_us": 10000,
        "rt_throttle_stall_us": 5251,
        "rt_budget_neighbour_period_us": 95238,
    }
    rr = {"quantum_policy": "rr", "rt_throttle_ambiguous_us": 9000.0}  # its quantum: no note
    labels = {"native": {"rt_throttle_ambiguous_us": 34060.0}, "container": split | rr}
    values = {"native": 34060.0, "container": 9000.0}
    for i, p in cells:
        sample = Sample("max_us", values[p], "us", False, labels=labels[p])
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", [sample], [], None, {})
    st.set_run_status(RUN, "finished")
    text = latency(ReportData.load(st, RUN))[0].markdown
    assert "container: the host's real-time budget is split between 2 groups" in text
    assert "4749 µs of every 10000 µs" in text and "5.251 ms" in text
    assert "native: a stall of 34.06 ms at no throttling boundary is kept" in text
    assert "container: a stall" not in text
