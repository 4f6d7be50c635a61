"""The web and network report sections, from a small fixture store (no tools run).

The store holds what the web suite writes: two platforms x two repetitions of an httperf
sweep (1 KB; one step of each sweep is invalid), wrk-max, a fixed-rate co-location cell with
a neighbour, and sockperf/iperf3 results for the network section.
"""

import json

from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.report.suites.web import network_section, web_section
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.store.description import RunDescription
from virtbench.workloads.base import Sample

RUN = "20240101-000000-cafe"
RATES = (1000.0, 2000.0, 3000.0)


def _s(metric, value, unit="req/s", hib=True, role="target", **labels) -> Sample:
    return Sample(metric, value, unit, hib, role, labels)


def _sweep(scale: float, rep: int) -> list[Sample]:
    out = []
    for step, rate in enumerate(RATES):
        labels = {"step": step, "offered_rate": rate, "file_size_kb": 1, "clients": 1}
        if step == 2:  # the client, not the server, was the limit here
            labels["invalid"] = "load generator CPU saturated (97% of its CPU)"
        reply = min(rate, 2400.0) * scale
        out += [_s("offered_rate", rate, **labels), _s("reply_rate", reply, **labels)]
        out.append(_s("client_cpu_pct", 40.0 + 10 * step, "%", False, "client", **labels))
    peak = 2000.0 * scale + rep  # best valid step (step 1)
    out += [
        _s("peak_throughput", peak, file_size_kb=1, offered_rate=2000.0, peak_step=1),
        _s("peak_offered_rate", 2000.0, file_size_kb=1, offered_rate=2000.0, peak_step=1),
        _s("steps", 3, "count", file_size_kb=1, stopped="falling"),
    ]
    return out


def _fixed(role: str) -> list[Sample]:
    labels = {"step": 0, "offered_rate": 500.0, "file_size_kb": 1, "phase": "fixed-rate"}
    # the client it ran with (drivers/httperf.size_clients)
    labels |= {"clients": 4, "clients_per_cpu": 4, "client_sockets": 4000, "timeout_s": 4.4}
    if role != "target":  # a neighbour's client-limited step must not show on the target's
        labels["invalid"] = "load generator CPU saturated (95% of its CPU)"
    return [
        _s("offered_rate", 500.0, role=role, **labels),
        _s("reply_rate", 497.0, role=role, **labels),
        _s("peak_throughput", 497.0, role=role, file_size_kb=1, phase="fixed-rate"),
        _s("peak_offered_rate", 500.0, role=role, file_size_kb=1, phase="fixed-rate"),
    ]


def _wrk(scale: float) -> list[Sample]:
    labels = {"file_size_kb": 1, "connections": 32}
    return [
        _s("requests_per_s", 9000.0 * scale, **labels),
        _s("latency_p50_ms", 1.5 / scale, "ms", False, **labels),
        _s("latency_p99_ms", 4.0 / scale, "ms", False, **labels),
        _s("latency_p99.9_ms", 9.0 / scale, "ms", False, **labels),
    ]


def _net() -> dict[str, list[Sample]]:
    return {
        "sockperf-tcp-rr": [
            _s("rtt_mean_us", 21.0, "us", False),
            _s("rtt_p50_us", 20.0, "us", False),
            _s("rtt_p99_us", 35.0, "us", False),
            _s("rtt_p99.9_us", 60.0, "us", False),
            _s("transactions_per_s", 47000.0, "trans/s"),
        ],
        "iperf3-tcp": [
            _s("throughput", 30000.0, "Mbit/s"),
            _s("sent", 30010.0, "Mbit/s"),
            _s("retransmits", 0.0, "count", False),
        ],
    }


def _store(tmp_path) -> Store:
    cells: list[tuple[str, str, str, str, int, list[Sample]]] = []
    for platform, scale in (("native", 1.0), ("container", 0.8)):
        for rep in (1, 2):
            cells.append((platform, "web", "httperf-sweep", "solo", rep, _sweep(scale, rep)))
            cells.append((platform, "web", "wrk-max", "solo", rep, _wrk(scale)))
    cells.append(
        ("native", "web", "httperf-sweep", "many:2", 1, _fixed("target") + _fixed("neighbour-1"))
    )
    for tc, samples in _net().items():
        cells.append(("native", "network", tc, "solo", 1, samples))
    return _store_of(tmp_path, cells, {"baseline": "native"})


def test_web_section_curves_tables_and_invalid_steps(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    sec = web_section(data)
    assert sec is not None
    text = str(sec.html)
    assert "server throughput vs offered rate, 1 KB files" in text and "<svg" in text
    # the client-limited steps stay on the curve, marked, and are counted per platform and
    # scenario (issue 12: dropping them hid the fall after saturation)
    # (one step, invalid in both repetitions: one marker at the mean of the invalid ones)
    assert text.count('data-invalid="native · solo"') == 1
    assert "native · solo: 1 invalid step(s)" in text
    # every curve says what its whiskers are, invalid steps or not
    assert text.count("Whiskers: min–max over repetitions.") >= text.count("offered rate (req/s)")
    assert "container · solo: 1 invalid step(s)" in text
    # peak table: mean over the two repetitions (2000+1, 2000+2) with n
    assert "Peak sustained throughput" in text
    assert "2,002 ± " in text
    assert "(n=2)" in text
    # the fixed-rate cell is not a peak: its own table, target role only
    assert "Throughput at a fixed offered rate" in text
    assert "many:2" in text
    # with the client it ran with: busy-polling httperf sharing a CPU delay each other
    assert "4 httperf, 4 per client CPU, 4.4 s timeout" in text
    assert "4 httperf, 4 per client CPU" in sec.markdown
    # wrk closed-loop maximum with latency percentiles
    assert "Closed-loop maximum" in text and "p99.9" in text
    assert "peak sustained throughput (httperf)" in sec.markdown
    assert "container" in sec.markdown


def test_web_curve_leaves_neighbours_off_the_target_lines(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    text = str(web_section(data).html)
    # the neighbour's (invalid) fixed-rate step is not counted under the target's curve
    note = text.split("Invalid steps are drawn")[1].split("</p>")[0]
    assert "many:2" not in note


def test_network_section_latency_and_bandwidth(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    sec = network_section(data)
    assert sec is not None
    text = str(sec.html)
    assert "TCP_RR round-trip time" in text and "iperf3-tcp throughput" in text
    assert "UDP_RR" not in text  # no such results: no empty table


def test_sections_absent_without_results(tmp_path):
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "x", "x.toml", "", 1, {}, {}, "0.1.0", description=RunDescription())
    st.set_run_status(RUN, "finished")
    data = ReportData.load(st, RUN)
    assert web_section(data) is None and network_section(data) is None


def test_whole_report_includes_web_section(tmp_path):
    path, _md = build.write(_store(tmp_path), RUN, tmp_path)
    html = path.read_text()
    assert "Web serving: throughput vs offered rate" in html
    assert "Network: bandwidth and round-trip latency" in html


def _store_of(tmp_path, cells, settings: dict | None = None) -> Store:
    """A store holding one run of `cells` (platform, suite, test case, scenario, rep, samples)."""
    st = Store.in_dir(tmp_path)
    described = describe(c[2] for c in cells)
    st.create_run(RUN, "web", "web.toml", "", 1, {}, settings or {}, "0.1.0", description=described)
    st.add_cells(
        (f"{RUN}/{i:04d}", RUN, i, p, json.dumps({"name": p, "type": p}), su, tc, sc, rep, "{}")
        for i, (p, su, tc, sc, rep, _samples) in enumerate(cells)
    )
    for i, (*_rest, samples) in enumerate(cells):
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", samples, [], None, {})
    st.set_run_status(RUN, "finished")
    return st


def test_peak_table_names_the_targets_one_size_beside_a_neighbour_of_another(tmp_path):
    # the target serves 1 KB only; a different:50 neighbour serves 50 KB beside it. The
    # target's size is constant, so it is no group dimension: the table must still say 1,
    # not "None" (the neighbour's 50 KB rows are not the target's)
    def peak(value, role="target", size=1):
        return [_s("peak_throughput", value, role=role, file_size_kb=size, peak_step=1)]

    cells = [
        ("native", "web", "httperf-sweep", "solo", 1, peak(2000.0)),
        (
            "native",
            "web",
            "httperf-sweep",
            "different:50",
            1,
            peak(1500.0) + peak(300.0, "neighbour-1", 50),
        ),
    ]
    data = ReportData.load(_store_of(tmp_path, cells), RUN)
    sec = web_section(data)
    assert sec is not None
    md = sec.markdown.split("peak sustained throughput (httperf):")[1]
    assert "None" not in md
    assert "| native | different:50 | 1 |" in md.replace("  ", " ")
