"""A cell's disturbance (issue 36 item 1): readings from captured /proc snapshots (quiet, and
with bench/_burst.py spinning one CPU as a tenant, seen or hidden in a PID namespace), the
labels and invalid flags a disturbed cell gets, the campaign key, the report's first line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from virtbench.campaign import loader
from virtbench.errors import CampaignError
from virtbench.metrics import disturbance as d
from virtbench.report import build
from virtbench.results import DISTURBANCE_LABEL, DISTURBED_LABEL, Sample
from virtbench.runner import describe
from virtbench.runner.cell import flag_disturbed
from virtbench.store.db import Store
from virtbench.store.description import IGNORED

DATA = Path(__file__).parent.parent / "data" / "disturbance"


def _reading(name: str, *, tenant_own: bool = False, hide_tenant: bool = False) -> d.Reading:
    """The reading between a capture's two snapshots. The capturing process stands for the
    runner; the burst generator (under `unshare`) is its child, so it is made a tenant here
    (left out of the runner's tree), or the cell's own work (`tenant_own`), or invisible as a
    tenant in another PID namespace would be (`hide_tenant`: its /proc entries dropped)."""
    base = DATA / name
    meta = json.loads((base / "meta.json").read_text())
    ledger = d.Ledger()
    for i in ("0", "1"):
        sc = d.scan(base / i)
        unshare = {p.pid for p in sc.procs.values() if p.comm == "unshare"}
        tenant = d.descendants(unshare, sc.procs)
        if hide_tenant:
            sc.procs = {k: v for k, v in sc.procs.items() if k not in tenant}
        own = d.descendants({meta["own_pid"]}, sc.procs)
        ledger.update(sc, own if tenant_own else own - tenant)
    r = d.compute(d.take(base / "0"), d.take(base / "1"), ledger, meta["seconds"])
    assert r is not None
    return r


def test_proc_stat_busy_is_user_nice_system_and_steal_apart():
    m = d.parse_proc_stat(
        "cpu  100 20 30 400 5 6 7 8 50 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nprocs_running 3\n"
    )
    assert (m.busy, m.steal, m.total, m.procs_running) == (150, 8, 576, 3)
    with pytest.raises(ValueError):
        d.parse_proc_stat("intr 1\n")


def test_captured_files_parse():
    m = d.parse_proc_stat((DATA / "quiet/0/proc/stat").read_text())
    assert m.total > m.busy > 0 and m.procs_running >= 1
    assert d.parse_psi_some_total((DATA / "quiet/0/proc/pressure/cpu").read_text()) > 0
    assert d.parse_psi_some_total("full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n") is None


def test_pid_stat_with_a_comm_holding_spaces_and_parentheses():
    text = "42 (a (b) c) S 7 42 42 0 -1 4194560 1 2 3 4 10 20 30 40 20 0 1 0 999 5 6"
    p = d.parse_pid_stat(text)
    assert (p.pid, p.comm, p.ppid, p.self_ticks, p.children_ticks, p.start) == (
        42,
        "a (b) c",
        7,
        30,
        70,
        999,
    )
    assert not p.kernel
    assert d.parse_pid_stat(text.replace("4194560", str(d.PF_KTHREAD))).kernel


def test_a_visible_tenant_spinning_one_of_two_cpus_is_named_and_disturbs():
    r = _reading("burst")
    assert r.outside_cpu_pct > 45  # one CPU of two, plus what else ran then
    command, pct = r.by[0]
    assert command == "python" and pct >= 45  # the tenant; another user's python ran too
    why = d.judge(r.label())
    assert why is not None and why.startswith("outside CPU") and "python" in why
    assert d.what(r.label()) == "outside CPU"


def test_a_tenant_in_another_pid_namespace_is_still_counted_as_unseen():
    r = _reading("burst", hide_tenant=True)
    assert dict(r.by)[d.UNSEEN] == pytest.approx(50, abs=6)
    assert d.judge(r.label()) is not None


def test_the_cells_own_work_is_not_outside():
    # the same snapshots with the spinning process as virtbench's own (a cell's workload)
    own = _reading("burst", tenant_own=True)
    tenant = _reading("burst")
    assert tenant.outside_cpu_pct - own.outside_cpu_pct == pytest.approx(50, abs=6)
    assert "python" not in dict(own.by) or dict(own.by)["python"] < 20


def test_quiet_capture_is_below_the_threshold():
    r = _reading("quiet")
    assert r.outside_cpu_pct < d.OUTSIDE_CPU_PCT and d.judge(r.label()) is None
    assert r.steal_pct < d.STEAL_PCT


def test_a_reaped_child_is_counted_once():
    # the child ran 30 ticks by the first scan and 10 more before its parent reaped it
    def proc(pid, ppid, self_t, child_t, start=10):
        return d.Proc(pid, "x", ppid, start, self_t, child_t, False)

    ledger = d.Ledger()
    ledger.update(d.Scan(100, {1: proc(1, 0, 0, 0), 2: proc(2, 1, 0, 0, 50)}), set())
    ledger.update(d.Scan(200, {1: proc(1, 0, 5, 0), 2: proc(2, 1, 30, 0, 50)}), set())
    ledger.update(d.Scan(300, {1: proc(1, 0, 5, 40)}), set())
    assert ledger.outside == {"x": 45}
    # a process missed by the previous scan (unreadable) is a baseline, not all new
    ledger.update(d.Scan(400, {1: proc(1, 0, 5, 40), 9: proc(9, 1, 500, 0, 20)}), set())
    assert ledger.outside == {"x": 45}


def test_judge_thresholds_and_short_cells():
    assert d.judge({"s": 10, "outside_cpu_pct": 2.0, "steal_pct": 0.0}) is None
    assert "steal" in (d.judge({"s": 10, "outside_cpu_pct": 0, "steal_pct": 9.0}) or "")
    # a half-second cell's ticks are too coarse to judge
    assert d.judge({"s": 0.5, "outside_cpu_pct": 90.0}) is None


def _samples() -> list[Sample]:
    return [Sample("events_per_s", 1.0, "events/s", True), Sample("x", 2.0, "s", False)]


def test_a_disturbed_cells_samples_are_invalid_with_the_figures():
    label = {"s": 5.0, "outside_cpu_pct": 42.0, "steal_pct": 0.0, "by": "stress-ng 41.0%"}
    samples = _samples()
    samples[1].labels["invalid"] = "its own reason"
    why = flag_disturbed(samples, label, "exclude")
    assert why is not None and "42.0%" in why and "stress-ng" in why
    assert samples[0].labels["invalid"] == f"disturbed: {why}"
    assert samples[1].labels["invalid"] == "its own reason"  # kept
    assert all(s.labels[DISTURBED_LABEL] == "outside CPU" for s in samples)


def test_keep_labels_only_and_a_quiet_cell_is_untouched():
    label = {"s": 5.0, "outside_cpu_pct": 42.0, "steal_pct": 0.0, "by": "x"}
    kept = _samples()
    flag_disturbed(kept, label, "keep")
    assert kept[0].labels == {DISTURBED_LABEL: "outside CPU"}
    quiet = _samples()
    assert flag_disturbed(quiet, {"s": 5.0, "outside_cpu_pct": 1.0}, "exclude") is None
    assert quiet[0].labels == {}


CAMPAIGN = """
[campaign]
name = "t"
{extra}
[[platforms]]
name = "native"
type = "native"
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


def test_campaign_key_disturbed():
    assert loader.parse(CAMPAIGN.format(extra=""), "c.toml").settings.disturbed == "exclude"
    c = loader.parse(CAMPAIGN.format(extra='disturbed = "keep"'), "c.toml")
    assert c.settings.disturbed == "keep"
    with pytest.raises(CampaignError) as err:
        loader.parse(CAMPAIGN.format(extra='disturbed = "ignore"'), "c.toml")
    text = str(err.value)
    assert "campaign.disturbed" in text and "exclude" in text and "keep" in text


def test_disturbance_labels_never_split_groups():
    desc = describe.describe(["sysbench-cpu-1t"])
    ignored = desc.labels_of(IGNORED, "sysbench-cpu-1t")
    assert {DISTURBANCE_LABEL, DISTURBED_LABEL} <= ignored


def test_live_reading_of_this_host_has_every_figure():
    r = d.background(0.6)
    assert r is not None
    label = r.label()
    assert {"s", "outside_cpu_pct", "steal_pct", "kernel_cpu_pct", "by"} <= label.keys()
    assert 0 <= label["outside_cpu_pct"] <= 100


# --- the report -----------------------------------------------------------------------------
RUN = "20260101-000000-abcd"


def _store(tmp_path, disturbed_cell: int | None, labelled: bool = True) -> Store:
    st = Store.in_dir(tmp_path)
    settings = {"repetitions": 2, "warmup": 0, "order": "interleaved", "baseline": "native"}
    desc = describe.describe(["sysbench-cpu-1t"])
    st.create_run(RUN, "t", "t.toml", "", 1, {"cores": 2}, settings, "0", description=desc)
    plan = [(i, p, rep) for i, (rep, p) in enumerate((r, p) for r in (1, 2) for p in PLATFORMS)]
    st.add_cells(
        (f"{RUN}/{i:04d}", RUN, i, p, "{}", "cpu", "sysbench-cpu-1t", "solo", rep, "{}")
        for i, p, rep in plan
    )
    for i, p, _rep in plan:
        samples = [Sample("events_per_s", 1000.0 if p == "native" else 990.0, "events/s", True)]
        outside = 40.0 if i == disturbed_cell else 1.5
        label = {"s": 5.0, "outside_cpu_pct": outside, "steal_pct": 0.0, "by": "stress-ng 39%"}
        if labelled:
            for s in samples:
                s.labels[DISTURBANCE_LABEL] = label
            flag_disturbed(samples, label, "exclude")
        st.start_cell(f"{RUN}/{i:04d}")
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", samples, [], None, {})
    return st


PLATFORMS = ("native", "container")


def test_report_says_first_how_many_cells_were_disturbed_and_by_what(tmp_path):
    html_text, markdown = build.render(_store(tmp_path, disturbed_cell=3), RUN)
    first = markdown.splitlines()[0]
    assert first.startswith("DISTURBED: 1 of 4 cells (outside CPU: 1; mostly by stress-ng)")
    assert "invalid" in first
    assert html_text.index("DISTURBED: 1 of 4") < html_text.index('id="run"')
    assert "disturbed: outside CPU 40.0% &gt; 10% of the machine" in html_text  # invalid list


def test_report_of_a_quiet_run_and_of_a_run_without_readings(tmp_path):
    _html, markdown = build.render(_store(tmp_path / "q", disturbed_cell=None), RUN)
    assert markdown.splitlines()[0].startswith("Host quiet: no cell of 4 disturbed")
    _html, markdown = build.render(_store(tmp_path / "o", None, labelled=False), RUN)
    assert "disturbed" not in markdown.lower()


def test_a_child_reaped_after_its_parent_was_read_is_not_counted_twice():
    # the scan read the parent before it reaped the child, then found the child gone: the
    # parent's cutime shows the child's 30 ticks only at the next scan
    def proc(pid, ppid, self_t, child_t, start=10):
        return d.Proc(pid, "x", ppid, start, self_t, child_t, False)

    ledger = d.Ledger()
    ledger.update(d.Scan(100, {1: proc(1, 0, 0, 0), 2: proc(2, 1, 0, 0, 50)}), set())
    ledger.update(d.Scan(200, {1: proc(1, 0, 0, 0), 2: proc(2, 1, 30, 0, 50)}), set())
    ledger.update(d.Scan(300, {1: proc(1, 0, 0, 0)}), set())
    ledger.update(d.Scan(400, {1: proc(1, 0, 0, 30)}), set())
    assert ledger.outside == {"x": 30}


def test_a_containers_reaper_is_own_but_not_its_other_children(tmp_path):
    # Docker's containerd-shim (pid 50, parent init) reaps the container's processes (in our
    # cgroup): its cutime is theirs. A user's process beside it (pid 60) stays outside.
    group = tmp_path / "vb-c"
    group.mkdir()
    (group / "cgroup.procs").write_text("51\n")

    def proc(pid, ppid):
        return d.Proc(pid, "p", ppid, 10, 0, 0, False)

    procs = {1: proc(1, 0), 50: proc(50, 1), 51: proc(51, 50), 52: proc(52, 51), 60: proc(60, 50)}
    assert d.own_pids(d.Own({1000}, {str(group)}), procs) == {50, 51, 52}
    # init is never a reaper of ours
    procs[51] = proc(51, 1)
    assert d.own_pids(d.Own({1000}, {str(group)}), procs) == {51, 52}
