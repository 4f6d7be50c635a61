import json
import re

import pytest

from virtbench.report import build, sections
from virtbench.report.sections import Section, register_section
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.store.description import RunDescription
from virtbench.workloads.base import Sample

RUN = "20240101-000000-abcd"


def _sample(metric, value, unit, hib=True, **labels):
    return Sample(metric, value, unit, hib, labels=labels)


@pytest.fixture
def store(tmp_path):
    st = Store.in_dir(tmp_path)
    host = {
        "cpu_model": "Test CPU 9000",
        "cores": 2,
        "memory_bytes": 24 * 2**30,
        "kernel": "6.18.0",
        "cgroup": "v1",
        "kvm": "pvm",
        "virtualization": "kvm",
        "tool_versions": {"sysbench": "1.0.20"},
    }
    settings = {"repetitions": 3, "warmup": 1, "order": "sequential", "baseline": "native"}
    test_cases = ("sysbench-cpu-1t", "mem-sweep", "sysbench-cpu-all")
    st.create_run(
        RUN, "synthetic", "x.toml", "", 7, host, settings, "0.1.0", description=describe(test_cases)
    )
    cells, seq = [], 0
    plan = []
    for platform in ("native", "vm"):
        for tc, suite in (("sysbench-cpu-1t", "cpu"), ("mem-sweep", "memory")):
            for rep in range(1, 4):
                plan.append((seq, platform, suite, tc, rep))
                cells.append(
                    (
                        f"{RUN}/{seq:04d}",
                        RUN,
                        seq,
                        platform,
                        json.dumps({"name": platform, "type": platform}),
                        suite,
                        tc,
                        "solo",
                        rep,
                        "{}",
                    )
                )
                seq += 1
    # a failed cell whose error must be escaped, not executed
    cells.append(
        (f"{RUN}/{seq:04d}", RUN, seq, "vm", "{}", "cpu", "sysbench-cpu-all", "solo", 1, "{}")
    )
    st.add_cells(cells)
    for seq, platform, _suite, tc, rep in plan:
        factor = 1.0 if platform == "native" else 0.8
        if tc == "sysbench-cpu-1t":
            value = 1000 * factor + rep * (1 if platform == "native" else 150)  # vm: noisy
            samples = [_sample("events_per_s", value, "events/s", threads=1)]
            if platform == "vm" and rep == 3:
                samples.append(_sample("events_per_s", 5.0, "events/s", invalid="saturated"))
        else:
            samples = [
                _sample("bandwidth", factor * 40000 / (1 + i) + rep, "MiB/s", block_size_bytes=bs)
                for i, bs in enumerate((4096, 65536, 1048576, 16777216))
            ]
        series = [("target", "cpu_util", float(t), 50.0 + t, "%") for t in range(5)]
        platform_labels = {"platform": {"platform_type": platform, "accel_used": "tcg"}}
        st.finish_cell(RUN, f"{RUN}/{seq:04d}", "ok", samples, series, None, platform_labels)
    st.finish_cell(
        RUN, f"{RUN}/{len(plan):04d}", "failed", [], [], "sysbench exited 1: <script>x</script>"
    )
    st.set_run_status(RUN, "finished")
    yield st
    st.close()


def test_report_html_is_self_contained_and_complete(store, tmp_path):
    path, md = build.write(store, RUN, tmp_path)
    text = path.read_text()
    assert path == tmp_path / "reports" / f"{RUN}.html"
    # offline: no URL, no script, no external reference of any kind
    assert not re.search(r"https?://|<script|<link|src=|@import|url\(", text)
    assert "&lt;script&gt;x&lt;/script&gt;" in text  # the error is shown, escaped
    for part in (
        "Test CPU 9000",
        "pvm",
        "tcg",
        "Suite: cpu",
        "Suite: memory",
        "Block-size curves",
        "Geometric mean",
        "Seed 004",
        "Time series",
        "Invalid samples",
        "saturated",
        "high CV",
        "+1 invalid",
        "<svg",
        "<table",
    ):
        assert part in text, part
    assert text.count("<svg") >= 5  # 2 bar charts, 1 curve, 1 score chart, time series


def test_report_numbers(store, tmp_path):
    _, md = build.write(store, RUN, tmp_path)
    # native sysbench: 1001, 1002, 1003 -> 1002 ± t(.975,2)*1/sqrt(3) = 2.484
    assert "1,002 ± 2.484" in md
    # vm excluded its invalid 5.0 sample: mean of 950, 1100, 1250 = 1100, ratio 1100/1002
    assert "1,100 ± 372.6 (×1.098, undecided)" in md  # its CI includes 1.0
    assert "+1 invalid" in md and "⚠CV" in md
    assert "sysbench-cpu-all solo #1: failed: sysbench exited 1" in md
    assert "| cpu |" in md and "geomean" in md


def test_plugin_sections_and_failures_are_contained(store, tmp_path):
    @register_section(45, "test-plugin")
    def plugin(data):
        return Section("Plug-in section", f"<p>{len(data.groups)} groups</p>", "plugin md")

    @register_section(46, "test-broken")
    def broken(data):
        raise RuntimeError("boom")

    try:
        path, md = build.write(store, RUN, tmp_path, tmp_path / "out.html")
        text = path.read_text()
        assert "Plug-in section" in text and "plugin md" in md
        assert "Section &#x27;test-broken&#x27; failed" in text and "boom" in text
        names = [e.name for e in sections.registered()]
        # the answer first: verdict and scores, then the suites, then the plug-in
        assert names.index("verdict") < names.index("scores") < names.index("suites")
        assert names.index("suites") < names.index("test-plugin") < names.index("host")
    finally:
        sections._REGISTRY.pop("test-plugin", None)
        sections._REGISTRY.pop("test-broken", None)


def test_report_on_empty_run(tmp_path):
    st = Store.in_dir(tmp_path)
    st.create_run("r1", "empty", "", "", None, {}, {}, "0.1.0", description=RunDescription())
    path, md = build.write(st, "r1", tmp_path)
    assert "virtbench run r1" in md and path.exists()
    st.close()
