"""The O_DIRECT plausibility rule (one for every platform), its verdicts in the store, and the
scores that read them: seed 004 totals only for the suites the paper scores, without invalid
samples, with their formula; start-up beside the workload geomean, not inside it."""

from __future__ import annotations

import json

import pytest

from virtbench.analysis import platform_facts, plausibility
from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.runner import validate
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.workloads.base import Sample

RUN = "20240101-000000-d15c"
FIO = ("bandwidth_mib_s", "MiB/s", True), ("iops", "IO/s", True), ("clat_mean_us", "us", False)
# platform -> (its recorded labels, O_DIRECT MiB/s per repetition, buffered MiB/s)
PLATFORMS = {
    "native": ({"platform_type": "native"}, [900, 1100, 1000], 5000),
    "crun-overlay": ({"platform_type": "container", "runtime": "crun"}, [950, 1000, 1050], 5000),
    "gvisor": (
        {"platform_type": "container", "runtime": "runsc", "storage": "overlay"},
        [4400, 4900, 4600],
        3000,
    ),
    "vm": ({"platform_type": "vm", "disk_cache": "writeback"}, [3200, 3300, 900], 2500),
}
STARTUP_MS = {"native": 6.4, "crun-overlay": 30.0, "gvisor": 200.0, "vm": 900.0}


def _fio(direct: int, bw: float) -> list[Sample]:
    labels = {"direct": direct, "rw": "read", "bs": "1M", "iodepth": 16, "fs_type": "ext2/ext3"}
    if direct:
        labels["direct_honoured"] = True
    values = {"bandwidth_mib_s": bw, "iops": bw, "clat_mean_us": 16e6 / bw}
    return [Sample(m, values[m], u, hib, labels=dict(labels)) for m, u, hib in FIO]


@pytest.fixture
def store(tmp_path):
    st = Store.in_dir(tmp_path)
    tcs = (("fio-seq-read", "disk"), ("sysbench-cpu-1t", "cpu"), ("container-startup", "lifecycle"))
    settings = {"repetitions": 3, "baseline": "native"}
    st.create_run(
        RUN, "t", "t.toml", "", 1, {}, settings, "0", description=describe(t for t, _ in tcs)
    )
    cells, plan = [], []
    for platform in PLATFORMS:
        for tc, suite in tcs:
            for rep in range(3):
                seq = len(cells)
                spec = json.dumps(
                    {"name": platform, "type": PLATFORMS[platform][0]["platform_type"]}
                )
                cells.append(
                    (f"{RUN}/{seq:04d}", RUN, seq, platform, spec, suite, tc, "solo", rep + 1, "{}")
                )
                plan.append((seq, platform, tc, rep))
    st.add_cells(cells)
    for seq, platform, tc, rep in plan:
        labels, direct, buffered = PLATFORMS[platform]
        if tc == "fio-seq-read":
            samples = _fio(0, buffered + rep) + _fio(1, direct[rep])
        elif tc == "sysbench-cpu-1t":
            samples = [Sample("events_per_s", 1000.0 - rep, "events/s", True)]
        else:
            samples = [Sample("runtime_startup_ms", STARTUP_MS[platform] + rep, "ms", False)]
        st.finish_cell(RUN, f"{RUN}/{seq:04d}", "ok", samples, [], None, {"platform": labels})
    st.set_run_status(RUN, "finished")
    yield st
    st.close()


def _invalid(st: Store) -> dict[tuple[str, str, int, int], str]:
    return {
        (r["platform"], r["metric"], json.loads(r["labels_json"])["direct"], r["repetition"]): r[
            "invalid_reason"
        ]
        for r in st.sample_rows(RUN)
        if r["test_case"] == "fio-seq-read" and not r["valid"]
    }


def test_direct_figures_beyond_the_device_are_stored_invalid_with_how_to_fix(store):
    flagged = validate.flag_implausible(store, RUN)
    bad = _invalid(store)
    assert len(flagged) == len(bad)
    # gVisor: every O_DIRECT run, every metric of it (latency too); never its buffered runs
    for rep in (1, 2, 3):
        for metric, _u, _h in FIO:
            assert ("gvisor", metric, 1, rep) in bad
    # the VM: the two runs served from the host page cache, not the one that reached a disk
    assert {k for k in bad if k[0] == "vm" and k[1] == "bandwidth_mib_s"} == {
        ("vm", "bandwidth_mib_s", 1, 1),
        ("vm", "bandwidth_mib_s", 1, 2),
    }
    assert not any(k[0] in ("native", "crun-overlay") or k[2] == 0 for k in bad)
    g = bad[("gvisor", "bandwidth_mib_s", 1, 1)]
    assert "implausible O_DIRECT figure" in g and "beats the host's own device" in g
    # no ceiling in these host facts: the fallback, native's largest figure, judged them
    assert "no disk ceiling" in g and "native 1000 MiB/s, n=3" in g and "limit 1375" in g
    assert "runtime=runsc, storage=overlay" in g  # what the platform recorded, no kind switch
    assert "disk_cache=writeback" in bad[("vm", "iops", 1, 1)]
    # the label carries the reason too, as a workload's own flag would
    row = next(r for r in store.sample_rows(RUN) if not r["valid"])
    assert json.loads(row["labels_json"])["invalid"] == row["invalid_reason"]
    assert validate.flag_implausible(store, RUN) == {}  # idempotent


def test_fallback_limit_is_the_native_maximum_times_the_factor():
    ref = plausibility.Reference(n=3, mean=1000.0, top=1300.0, unit="MiB/s")
    assert ref.limit == pytest.approx(plausibility.LIMIT_FACTOR * 1300.0)


def test_without_a_native_figure_nothing_is_flagged_and_it_says_so(store):
    rows = [r for r in store.sample_rows(RUN) if r["platform"] != "native"]
    d = store.description(RUN)
    assert plausibility.implausible(rows, d) == {}
    assert plausibility.unchecked(rows, d) == ["fio-seq-read"]


def test_the_reference_is_the_platform_the_run_says_reaches_the_device(store):
    # what the runner stored of each platform (runner/describe.platform_facts), not its type:
    # were the VM the one on the host's device, its figures would be the reference
    said = {p: {"runtime_tools": [], "host_device": p == "vm"} for p in PLATFORMS}
    on_device = platform_facts.host_device({platform_facts.PLATFORMS: said})
    rows, d = store.sample_rows(RUN), store.description(RUN)
    flagged = plausibility.implausible(rows, d, (), on_device)
    # the VM is no longer judged; only gVisor beats 1.25 x its largest figure (4,125)
    assert {r["platform"] for r in rows if r["sample_id"] in flagged} == {"gvisor"}
    reason = next(iter(flagged.values()))
    assert "native 2467 MiB/s, n=3" in reason and "limit 4125" in reason
    assert plausibility.unchecked(rows, d, (), on_device) == []


def test_seed004_disk_score_excludes_invalid_samples_and_says_so(store):
    validate.flag_implausible(store, RUN)
    data = ReportData.load(store, RUN)
    assert [s.suite for s in data.seed004] == ["cpu", "disk"]  # no lifecycle total
    disk = next(s for s in data.seed004 if s.suite == "disk")
    direct = next(t for t in disk.tests if t[0] == "fio-seq-read" and dict(t[2])["direct"] == 1)
    top, where = disk.maxima[direct]
    assert where[0] in ("native", "crun-overlay") and top < 1100  # never gVisor's or the VM's
    assert (direct, ("gvisor", "solo")) not in disk.test_scores
    assert len(disk.excluded[(direct, ("gvisor", "solo"))]) == 3
    assert disk.test_scores[(direct, ("vm", "solo"))] == pytest.approx(900 / top)
    assert "fio-seq-read [direct=1]" in disk.totals[("gvisor", "solo")].missing
    text, md = build.render(store, RUN)
    assert "left out as invalid" in text and "max (where)" in text
    assert "No total for lifecycle" in text
    assert "left out as invalid: gvisor · solo · fio-seq-read [direct=1]: 3 samples" in md
    assert "no total for lifecycle" in md


def test_startup_is_beside_the_workload_geomean(store):
    data = ReportData.load(store, RUN)
    geo = {(g.suite, g.platform): g for g in data.geomeans}
    crun_all = geo[("all", "crun-overlay")]
    assert sorted(crun_all.contains) == ["cpu", "disk"]
    assert geo[("lifecycle", "crun-overlay")].beside and not crun_all.beside
    # start-up is ~5x slower, cpu equal, disk about equal: "all" shows no start-up in it
    assert 0.9 < crun_all.value < 1.1
    assert geo[("lifecycle", "crun-overlay")].value < 0.3


def test_report_says_when_no_native_figure_could_check(store):
    with store.tx() as c:
        c.execute(
            "DELETE FROM samples WHERE cell_id IN (SELECT cell_id FROM cells"
            " WHERE platform = 'native' AND test_case = 'fio-seq-read')"
        )
    html, md = build.render(store, RUN)
    assert "were not checked against the host" in html
    assert "fio-seq-read were not checked" in md
