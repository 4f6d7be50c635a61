"""What keeps a large run's report affordable (bench/report_cost.py measures it: a full
colocation-web run took 12 min and 6 GB): rows share the texts and labels they repeat, work
done for one shared value is not redone per row, and figures no page shows are not computed.
Each test fails on the code before: the report's figures themselves are the other tests'."""

from __future__ import annotations

import gc
import json
import math
import types

from virtbench.analysis import colocation as coloc
from virtbench.analysis import groups as groups_mod
from virtbench.analysis import normalize, stats
from virtbench.analysis.colocation_steps import _Within
from virtbench.analysis.groups import Group
from virtbench.report import build, sections
from virtbench.report.data import ReportData
from virtbench.report.labels import parse_labels
from virtbench.report.suites.colocation import roles
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.store.description import DIMENSION
from virtbench.workloads.base import Sample

RUN = "20261201-000000-c0c0"
TC = "httperf-sweep"
PARAMS = {"file_sizes": [1, 4], "schedule": {"1": [100.0, 200.0], "4": [50.0, 100.0]}}


def _store(tmp_path, reps: int = 3) -> Store:
    """A web run: native and vm, `reps` solo cells each, one sweep step's metrics sharing
    their labels (env_params, as a co-location step's) and a peak per cell."""
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "r", "r.toml", "", 1, {}, {"baseline": "native"}, "0",
                  description=describe([TC]))  # fmt: skip
    plan = [(p, rep) for p in ("native", "vm") for rep in range(1, reps + 1)]
    cells = [(f"{RUN}/{i:04d}", RUN, i, p, "{}", "web", TC, "solo", rep, "{}")
             for i, (p, rep) in enumerate(plan)]  # fmt: skip
    st.add_cells(cells)
    for i, (_p, rep) in enumerate(plan):
        step = {"file_size_kb": 1, "step": 0, "env_params": PARAMS}
        samples = [
            Sample(m, 100.0 + rep, "req/s", True, "target", step)
            for m in ("offered_rate", "reply_rate", "send_rate")
        ]
        peak = {"file_size_kb": 1, "offered_rate": 95.0 * rep}  # an ignored label that varies
        samples.append(Sample("peak_throughput", 90.0 * rep, "req/s", True, "target", peak))
        labels = {"platform": {"cpu_quota_us": 50000}}
        st.finish_cell(RUN, cells[i][0], "ok", samples, [], labels=labels)
    return st


def test_rows_share_the_texts_they_repeat(tmp_path):
    rows = _store(tmp_path).sample_rows(RUN)
    assert rows[0]["labels_json"] == rows[1]["labels_json"]
    assert rows[0]["labels_json"] is rows[1]["labels_json"]  # one step's metrics
    assert rows[0]["cell_labels"] is rows[3]["cell_labels"]  # one cell's samples
    assert rows[0]["platform"] is rows[9]["platform"] and rows[0]["metric"] is rows[4]["metric"]


def test_labels_are_parsed_once_per_text_and_equal_values_shared():
    texts = [
        {"step": 0, "env_params": {"schedule": [1.5, 2.5]}, "who": "target"},
        {"step": 0, "env_params": {"schedule": [1.5, 2.5]}, "who": "target"},
        {"step": 1, "env_params": {"schedule": [1.5, 2.5]}, "who": "target"},
        {"ints": [1], "zero": [0.0]},
        {"ints": [1.0], "zero": [-0.0]},
        {"ints": [True], "zero": [0.0]},
    ]
    rows = [{"labels_json": json.dumps(t)} for t in texts] + [{"labels_json": None}]
    parse_labels(rows)
    assert [r["labels"] for r in rows] == [*texts, {}]
    a, b, c = (r["labels"] for r in rows[:3])
    assert a is b and a is not c  # one dict per text
    assert a["env_params"] is c["env_params"]  # equal nested values: one object
    assert next(iter(a)) is next(iter(c)) and a["who"] is c["who"]  # keys and texts too
    # equal in Python, not alike in JSON: never one object (1 == 1.0 == True, 0.0 == -0.0)
    ints = [r["labels"]["ints"][0] for r in rows[3:6]]
    assert [type(v) for v in ints] == [int, float, bool]
    zeros = [math.copysign(1, r["labels"]["zero"][0]) for r in rows[3:6]]
    assert zeros == [1, -1, 1]


def test_a_group_keeps_its_rows_labels_until_one_differs(tmp_path):
    st = _store(tmp_path)
    data = ReportData.load(st, RUN)
    rows = {(r["platform"], r["metric"], r["repetition"]): r for r in data.samples}
    by_key = {(g.key.platform, g.key.metric): g for g in data.groups}
    # three repetitions with the same labels: the first row's dict itself, not a copy
    assert by_key[("vm", "reply_rate")].labels is rows[("vm", "reply_rate", 1)]["labels"]
    # offered_rate differs: a dict of what they share
    assert by_key[("vm", "peak_throughput")].labels == {"file_size_kb": 1}
    assert rows[("vm", "peak_throughput", 1)]["labels"]["offered_rate"] == 95.0  # unchanged
    st.close()


def test_label_roles_are_looked_up_once():
    d = describe([TC])
    assert d.labels_of(DIMENSION, TC) is d.labels_of(DIMENSION, TC)
    assert "file_size_kb" in d.labels_of(DIMENSION, TC)


def test_a_shared_label_value_is_encoded_once(monkeypatch):
    encoded = []
    real = groups_mod._scalar

    def scalar(value):
        if isinstance(value, dict):
            encoded.append(value)
        return real(value)

    monkeypatch.setattr(groups_mod, "_scalar", scalar)
    params = {"schedule": {"1": [1.0, 2.0]}}  # shared by every row, as labels.py shares it
    row = {"test_case": TC, "role": "target", "cell_id": "c"}
    rows = [
        row | {"metric": m, "labels": {"step": k, "env_params": params}}
        for k in range(10)
        for m in ("reply_rate", "send_rate")
    ]
    groups_mod.dimension_keys(rows, describe([TC]))
    assert len(encoded) == 1


def test_cell_labels_are_parsed_once_per_cell(monkeypatch):
    loads = []
    fake = types.SimpleNamespace(loads=lambda t: loads.append(t) or json.loads(t), dumps=json.dumps)
    monkeypatch.setattr(coloc, "json", fake)
    cell = json.dumps({"platform": {"cpu_quota_us": 50000}})
    rows = [
        {"metric": "peak_throughput", "role": "target", "platform": "native", "test_case": TC,
         "scenario": "identical", "cell_id": "c", "repetition": 1, "valid": 1, "value": 1.0,
         "labels": {"file_size_kb": k, "peak_step": 1}, "cell_labels": cell}
        for k in range(20)
    ]  # fmt: skip
    limits = coloc._limits(rows, {TC: "peak_throughput"}, {TC: {"file_size_kb"}})
    assert set(limits.values()) == {"server (CPU budget 0.5)"}
    assert len(loads) == 1


def test_comparisons_are_made_when_asked_for(tmp_path, monkeypatch):
    st = _store(tmp_path)
    gs = ReportData.load(st, RUN).groups
    made = []
    real = normalize.estimate
    monkeypatch.setattr(normalize, "estimate", lambda x, b: made.append(x.key) or real(x, b))
    comps = normalize.against_baseline(gs, "native")
    assert made == []  # a Student-t quantile per ratio, most of which no page shows
    vm = next(g for g in gs if g.key.platform == "vm" and g.key.metric == "reply_rate")
    c = comps.get(vm.key)
    assert c is not None and c.estimate == real(
        vm, next(g for g in gs if g.key == vm.key.on("native"))
    )
    # its family (vm · solo's primary target results, judged together by Holm), no more
    family = {g.key for g in gs if g.key.platform == "vm" and g.primary and g.key.role == "target"
              and g.key.scenario == vm.key.scenario}  # fmt: skip
    assert vm.key in made and set(made) <= family | {vm.key}
    before = len(made)
    assert comps[vm.key] is comps.get(vm.key) and len(made) == before  # once
    by_key = {g.key: g for g in gs}
    eager = [g.key for g in gs if (b := by_key.get(g.key.on("native"))) and real(g, b)]
    assert list(comps) == eager and len(comps) == len(eager)
    st.close()


def test_a_t_quantile_is_computed_once_per_df(monkeypatch):
    calls = []
    real = stats.t_quantile
    monkeypatch.setattr(stats, "t_quantile", lambda p, df: calls.append(df) or real(p, df))
    stats.t_critical.cache_clear()
    try:
        for i in range(50):
            stats.summarize([1.0, 2.0, 4.0 + i])
    finally:
        stats.t_critical.cache_clear()  # made through the counter: not kept for other tests
    assert calls == [2]


def test_suite_tables_never_compare_groups_field_by_field(tmp_path, monkeypatch):
    st = _store(tmp_path)

    def refuse(self, other):
        raise AssertionError("Group == Group: every pair of a run's groups, field by field")

    monkeypatch.setattr(Group, "__eq__", refuse)
    html, _md = build.render(st, RUN)
    assert "Suite: web" in html
    st.close()


def test_invalid_points_are_looked_up_once_per_summary_row(monkeypatch):
    found = []
    real = roles.point_of
    monkeypatch.setattr(roles, "point_of", lambda lab, dims: found.append(1) or real(lab, dims))
    row = {"role": "target", "cell_id": "c", "test_case": TC}
    bad = [row | {"valid": 0, "labels": {"file_size_kb": 1, "step": k}} for k in range(20)]
    summaries = [row | {"valid": 1, "labels": {"file_size_kb": 1, "step": k, "stdev": 1.0}}
                 for k in range(30)]  # fmt: skip
    data = types.SimpleNamespace(samples=bad + summaries, description=describe([TC]))
    off_plan = roles.unplanned(data)
    assert [off_plan(s) for s in summaries] == [True] * 20 + [False] * 10
    assert len(found) == 20 + 30  # was 20 + 30 x 20: each row's point again per invalid one


def test_series_points_of_a_window_in_stored_order():
    pts = [{"t": t, "i": i} for i, t in enumerate([3.0, 1.0, 2.0, 5.0, 2.5, 4.0, 1.0])]
    within = _Within(pts)
    assert [p["i"] for p in within(1.0, 3.0)] == [0, 2, 4]  # (t0, t1]: 1.0 is out, 3.0 in
    assert within(5.0, 9.0) == [] and [p["i"] for p in within(0.0, 1.0)] == [1, 6]


def test_a_report_is_built_with_the_cycle_collector_paused(tmp_path):
    st = _store(tmp_path, reps=1)
    seen = []
    sections.register_section(order=999, name="test-gc-probe")(
        lambda data: seen.append(gc.isenabled())
    )
    try:
        assert gc.isenabled()
        build.render(st, RUN)
    finally:
        sections._REGISTRY.pop("test-gc-probe")
        st.close()
    assert seen == [False] and gc.isenabled()  # back on after it
