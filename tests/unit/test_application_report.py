"""The application report section, from a small store of what the workload writes (its own
results() over synthetic .jtl rows; no tool runs): two platforms x two repetitions, one
interval of one platform invalid."""

import json

from virtbench.drivers import jmeter
from virtbench.platforms.base import ExecResult
from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.report.suites.application import application_section
from virtbench.runner.describe import describe
from virtbench.serving.loadgen import ClientRun
from virtbench.store.db import Store
from virtbench.workloads.application import DayTraderJMeter
from virtbench.workloads.base import RunContext

RUN = "20240101-000000-beef"


def _samples(per_s: int, bad_interval: int | None = None):
    """Requests of 5 ms, `per_s` a second for 2 s dry run + 6 s measured in 2 s intervals."""
    rows = [jmeter.Row(1_000_000 + int(1000 * k / per_s), 5, True, "200") for k in range(8 * per_s)]
    if bad_interval is not None:
        t = 1_000_000 + 2000 * (bad_interval + 1) + 500
        rows += [jmeter.Row(t, 5, False, "500")] * (per_s // 2)
    p = {k: v.default for k, v in DayTraderJMeter.params.items()}
    ctx = RunContext(params=p | {"dry_run": 2, "duration": 6, "interval": 2, "max_error_pct": 10})
    run = ClientRun(ExecResult([], 0, "", "", 8.0), 0.3)
    return DayTraderJMeter().results(rows, run, {"users": 8, "interval_s": 2}, ctx)


def _store(tmp_path) -> Store:
    st = Store.in_dir(tmp_path)
    cells = []
    for platform, rate, bad in (("native", 100, None), ("crun", 80, 1)):
        for rep in (1, 2):
            cells.append((platform, rep, _samples(rate + rep, bad)))
    st.create_run(
        RUN,
        "app",
        "app.toml",
        "",
        1,
        {},
        {"baseline": "native"},
        "0.1.0",
        description=describe(["daytrader-jmeter"]),
    )
    st.add_cells(
        (
            f"{RUN}/{i:04d}",
            RUN,
            i,
            p,
            json.dumps({"name": p, "type": p}),
            "application",
            "daytrader-jmeter",
            "solo",
            rep,
            "{}",
        )
        for i, (p, rep, _s) in enumerate(cells)
    )
    for i, (*_rest, samples) in enumerate(cells):
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", samples, [], None, {})
    st.set_run_status(RUN, "finished")
    return st


def test_application_section_table_and_interval_chart(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    sec = application_section(data)
    assert sec is not None
    text = str(sec.html)
    assert "Measured period" in text and "p99" in text and "dry run" in text
    # per-interval throughput: a chart with a line per platform, the bad interval marked
    assert "JMeter throughput per interval" in text and "<svg" in text
    assert text.count('data-invalid="crun"') == 1 and 'data-invalid="native"' not in text
    # (101 + 102) / 2 successful req/s over the measured period, mean of two repetitions
    assert "101.5 ± 6.353 req/s (n=2)" in text
    assert "application, per interval" in sec.markdown and "crun" in sec.markdown


def test_whole_report_has_the_section_and_a_seed004_total(tmp_path):
    st = _store(tmp_path)
    path, _md = build.write(st, RUN, tmp_path)
    html = path.read_text()
    assert "Application: DayTrader-like servlet under JMeter" in html
    data = ReportData.load(st, RUN)
    assert [s.suite for s in data.seed004] == ["application"]
