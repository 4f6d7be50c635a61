"""Seed 004 Figs. 4-5 section (container storage and network modes) from a synthetic store:
which platforms pair up (from stored options, not names), the ratios it draws and tabulates,
and invalid samples flagged, not averaged."""

from __future__ import annotations

import dataclasses
import json

import pytest

from virtbench.analysis import platform_facts
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.options import SCHEMA
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.report.suites import container_modes as cm
from virtbench.runner.describe import describe
from virtbench.runner.describe import platform_facts as facts_of
from virtbench.store.db import Store
from virtbench.workloads.base import Sample

RUN = "20260101-000000-d0c4"

# name -> (type, options as written, recorded docker_nat label, suites it runs)
PLATFORMS = {
    "native": ("native", {}, None, ("disk", "network")),
    "dk-cow": ("container", {"runtime": "docker"}, None, ("disk", "network")),
    "dk-mnt": ("container", {"runtime": "docker", "storage": "volume"}, None, ("disk",)),
    "dk-nat": (
        "container",
        {"runtime": "docker", "network": "nat", "publish_port_offset": 30000},
        "userland-proxy",
        ("network",),
    ),
    "dk-dnat": (
        "container",
        {"runtime": "docker", "network": "nat", "docker_nat": "iptables"},
        "iptables",
        ("network",),
    ),
    "crun-a": ("container", {}, None, ("disk",)),
    "crun-b": ("container", {"storage": "volume"}, None, ("disk",)),
    # differs in storage AND a limit: pairs with nobody
    "crun-capped": ("container", {"storage": "volume", "cpu_weight": 256}, None, ("disk",)),
}
# MB/s of fio-iozone per platform (x phase factor); iperf3 Gbit/s
DISK = {"native": 100.0, "dk-cow": 80.0, "dk-mnt": 98.0, "crun-a": 85.0, "crun-b": 99.0}
DISK["crun-capped"] = 90.0
NET = {"native": 40.0, "dk-cow": 39.0, "dk-nat": 10.0, "dk-dnat": 30.0}
PHASES = ("write", "rewrite", "read", "reread", "random-read", "random-write")


def _store(tmp_path, host: dict | None = None) -> Store:
    st = Store.in_dir(tmp_path)
    st.create_run(
        RUN,
        "modes",
        "x.toml",
        "",
        1,
        host or {},
        {"baseline": "native"},
        "0.1.0",
        description=describe(("fio-iozone", "iperf3-tcp")),
    )
    plan, seq = [], 0
    for rep in (1, 2, 3):
        for name, (_t, _o, _n, suites) in PLATFORMS.items():
            for suite in suites:
                plan.append((seq, name, suite, rep))
                seq += 1
    st.add_cells(
        (
            f"{RUN}/{s:04d}",
            RUN,
            s,
            p,
            json.dumps(
                {"name": p, "type": PLATFORMS[p][0], "options": PLATFORMS[p][1], "host": None}
            ),
            suite,
            "fio-iozone" if suite == "disk" else "iperf3-tcp",
            "solo",
            rep,
            "{}",
        )
        for s, p, suite, rep in plan
    )
    for s, p, suite, rep in plan:
        kind, options, nat, _suites = PLATFORMS[p]
        plat = {"platform_type": kind, **options} | ({"docker_nat": nat} if nat else {})
        samples = []
        if suite == "disk":
            for direct in (0, 1):
                for i, phase in enumerate(PHASES):
                    labels = {"phase": phase, "direct": direct}
                    if p == "dk-cow" and phase == "write" and direct == 1 and rep == 3:
                        labels["invalid"] = "O_DIRECT beyond the device"
                    v = DISK[p] * (1 + i) * (1 + 0.01 * rep)
                    samples.append(Sample("bandwidth_mib_s", v, "MiB/s", True, labels=labels))
        else:
            v = NET[p] * (1 + 0.01 * rep)
            samples.append(Sample("throughput", v * 1000, "Mbit/s", True))
        st.finish_cell(RUN, f"{RUN}/{s:04d}", "ok", samples, [], None, {"platform": plat})
    st.set_run_status(RUN, "finished")
    return st


def test_defaults_match_the_container_schema():
    # what the container type declares, and what a run stored before it declared assumes
    schema = {k: SCHEMA[k][0] for k in ("runtime", "storage", "network")}
    assert ContainerPlatform.mode_defaults() == schema
    assert platform_facts.mode_defaults({}, {"name": "c", "type": "container"}) == schema
    assert platform_facts.mode_defaults({}, {"name": "n", "type": "native"}) is None


def _storage_sets(data) -> dict[str, list[tuple[str, str]]]:
    return {
        ms.shared: [(m.platform, m.mode) for m in ms.members]
        for ms in cm.mode_sets(data, cm.STORAGE)
    }


def test_which_platforms_have_modes_comes_from_the_run_platform_facts(tmp_path):
    specs = [
        PlatformSpec(name, kind, dict(options))
        for name, (kind, options, _n, _s) in PLATFORMS.items()
    ]
    declared = facts_of(specs)
    # as the runner stores them: the same sets as a run stored before the facts
    same = ReportData.load(_store(tmp_path / "a", declared), RUN)
    before = ReportData.load(_store(tmp_path / "b"), RUN)
    assert _storage_sets(same) == _storage_sets(before) and len(_storage_sets(same)) == 2
    # a type the facts give no modes is in no set, whatever its stored type says
    for name in ("crun-a", "crun-b"):
        declared[platform_facts.PLATFORMS][name][platform_facts.MODES] = None
    data = ReportData.load(_store(tmp_path / "c", declared), RUN)
    assert list(_storage_sets(data)) == ["docker, network host"]


def test_sets_pair_platforms_equal_but_for_the_axis(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    storage = {
        ms.shared: [(m.platform, m.mode) for m in ms.members]
        for ms in cm.mode_sets(data, cm.STORAGE)
    }
    assert storage == {
        "docker, network host": [("dk-cow", "overlay"), ("dk-mnt", "volume")],
        "crun, network host": [("crun-a", "overlay"), ("crun-b", "volume")],
    }
    (network,) = cm.mode_sets(data, cm.NETWORK)
    assert network.shared == "docker, storage overlay"
    assert [(m.platform, m.mode) for m in network.members] == [
        ("dk-cow", "host"),
        ("dk-nat", "nat (userland-proxy)"),
        ("dk-dnat", "nat (iptables)"),
    ]
    assert network.reference.platform == "dk-cow"


def test_section_draws_ratios_and_flags_invalid(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    section = cm.container_modes(data)
    assert section is not None
    page = str(section.html)
    assert page.index("Fig. 4 network") < page.index("Fig. 5 storage")
    # fio-iozone's 12 points split into direct=0 and direct=1 charts, phases as x labels
    assert "fio-iozone · direct=1: ratio to native" in page
    # phases in the order measured (IOzone's), not alphabetical
    at = [page.index(f">{phase}<") for phase in PHASES]
    assert at == sorted(at)
    assert page.count('data-ref="1"') == 2 * 2 + 1  # 2 storage sets x 2 charts + network
    # the invalid sample is counted and named, the bar marked, not averaged
    assert "+1 invalid" in page and "O_DIRECT beyond the device" in page
    assert 'stroke="#b00"' in page
    # NAT through the proxy: 10/40 of host, the table's ratio decides "worse"
    lines = section.markdown.splitlines()
    nat = [ln for ln in lines if "userland-proxy" in ln][0]
    assert "geomean ×0.256" in nat and "1 slower" in nat
    vol = [ln for ln in lines if "dk-cow [overlay] ÷ dk-mnt [volume]" in ln][0]
    assert "over 12 tests" in vol and "12 slower" in vol
    assert "crun-capped" not in page


def test_a_container_in_a_vm_pairs_only_inside_that_vm(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    for i, c in enumerate(data.cells):
        if c.platform == "crun-b":  # the same options, but stacked in a VM
            spec = json.loads(c.platform_json) | {"host": "vm1"}
            data.cells[i] = dataclasses.replace(c, platform_json=json.dumps(spec))
    shared = [ms.shared for ms in cm.mode_sets(data, cm.STORAGE)]
    assert shared == ["docker, network host"]


def test_no_section_without_a_pair(tmp_path):
    data = ReportData.load(_store(tmp_path), RUN)
    data.cells = [c for c in data.cells if c.platform in ("native", "dk-cow", "crun-capped")]
    assert cm.container_modes(data) is None


def test_without_baseline_ratios_to_the_reference_mode(tmp_path):
    st = _store(tmp_path)
    data = ReportData.load(st, RUN)
    data.settings["baseline"] = None
    data.comparisons = {}
    page = str(cm.container_modes(data).html)
    assert "ratio to volume (dk-mnt)" in page and "ratio to host (dk-cow)" in page


@pytest.mark.parametrize("n", [3, 9])
def test_parts_label_the_axis_with_what_varies(n):
    # one test case: its name in the title, the phase values alone on the axis (a label
    # "t [bs=1M, phase=p0]" is clipped to nothing); bs follows from the phase: left off
    xs = [("solo", "t", (("bs", "4k" if i % 2 else "1M"), ("phase", f"p{i}"))) for i in range(n)]
    (got,) = cm.parts(xs)
    assert got.suffix == "t" and [got.labels[x] for x in xs] == [f"p{i}" for i in range(n)]


def test_parts_test_cases_without_dimensions_share_a_chart():
    xs = [("solo", t, ()) for t in ("iperf3-tcp", "iperf3-udp", "sockperf-pingpong")]
    (got,) = cm.parts(xs)
    assert got.suffix == "" and got.labels[xs[2]] == "sockperf-pingpong"


def test_whole_report_has_the_section(tmp_path):
    html, md = build.render(_store(tmp_path), RUN)
    assert "Container network and storage modes (seed 004 Figs. 4-5)" in html
    assert "container modes" in md
