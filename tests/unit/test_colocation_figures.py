"""Pure helpers of the co-location figures (report/suites/colocation/figures.py)."""

from virtbench.analysis import colocation_steps as cs
from virtbench.report import svg
from virtbench.report.suites.colocation import figures as fig


def _pts(metric, values):
    return [{"metric": metric, "value": v} for v in values]


def test_throughput_series_preference():
    # the workload's own throughput series wins
    pts = _pts("cpu_util", [50]) + _pts("reply_rate.1KB", [900]) + _pts("net_tx_bytes_per_s", [1e6])
    assert fig._throughput_metric(pts) == "reply_rate.1KB"
    # a server without one: the bytes it sent, if it serves the network
    assert fig._throughput_metric(_pts("net_tx_bytes_per_s", [2e6]) + _pts("cpu_util", [9])) == (
        "net_tx_bytes_per_s"
    )
    # a CPU workload: tap chatter (ARP) is not throughput
    assert fig._throughput_metric(_pts("net_tx_bytes_per_s", [140]) + _pts("cpu_util", [80])) == (
        "cpu_util"
    )
    assert fig._throughput_metric([]) is None


def test_sweep_step_as_intensity():
    params = {"mode": "capacity", "start_fraction": 0.1, "step_fraction": 0.1}
    assert cs.intensity({"step": 4, "env_params": params}) == 50.0
    absolute = {"mode": "absolute", "start_fraction": 0.1, "step_fraction": 0.1}
    assert cs.intensity({"step": 4, "offered_rate": 500, "env_params": absolute}) is None
    assert cs.intensity({"env_params": params}) is None


def test_normalized_overview_is_one_chart_per_size_with_whiskers_and_readable_names():
    import re

    from virtbench.analysis.colocation import CellStats
    from virtbench.report.suites.colocation import normalized_charts

    def st(platform, scenario, size, mean, lo, hi, path):
        dims = (("file_size_kb", size), ("net_path", path))
        s = CellStats(platform, "wrk-max", scenario, "requests_per_s", "req/s", True, mean, 0.1,
                      3, 0, dims=dims, target_range=(lo, hi))  # fmt: skip
        s.solo_mean, s.normalized = 1000.0, mean / 1000.0
        return s

    stats = []
    for size in (1, 10, 200):
        for platform, path in (("native", "loopback"), ("container", "host-bridge")):
            stats.append(st(platform, "solo", size, 1000, 900, 1100, path))
            stats.append(st(platform, "idle-neighbours:3", size, 900, 850, 950, path))
            stats.append(st(platform, "identical", size, 500, 400, 600, path))
    (html_text,) = normalized_charts(stats, lambda p: "#000")
    charts = re.findall(r"<svg.*?</svg>", html_text, re.S)
    # a chart per size, in size order, both platforms in each (different net paths)
    assert [re.search(r"wrk-max · (\d+) KB", c).group(1) for c in charts] == ["1", "10", "200"]
    assert all('data-series="native"' in c and 'data-series="container"' in c for c in charts)
    assert all(">solo<" not in c for c in charts)  # solo is the reference line, not a bar
    assert "M" in charts[0] and 'data-ref="1"' in charts[0]  # whiskers and the 1.0 line
    assert all("…" not in c for c in charts)  # every scenario's name whole
    # too long for its group: the kind over its argument, not "idle-ne…" under every one
    assert svg._label_lines("idle-neighbours:3", 12) == ["idle-neighb…", "3"]
    assert svg._label_lines("identical", 12) == ["identical"]
    assert "never saturated" not in html_text
    # a row whose load came from a solo peak that never saturated has no bar: the note says so
    low = st("container", "identical", 1, 500, 400, 600, "host-bridge")
    low.normalized, low.bad_peak = None, "schedule scaled by a solo peak that never saturated"
    (html_text,) = normalized_charts([*stats, low], lambda p: "#000")
    assert "A red – where a bar would be" in html_text and "never saturated" in html_text
    # a platform whose every row at a size was voided is still in that chart's legend
    only = st("vm-virtio", "identical", 1, 134, 130, 140, "host-bridge")
    only.normalized, only.bad_peak = None, low.bad_peak
    (html_text,) = normalized_charts([*stats, only], lambda p: "#000")
    first = re.findall(r"<svg.*?</svg>", html_text, re.S)[0]
    assert 'data-legend="vm-virtio"' in first
