"""A different:SIZE neighbour's runs in the generic tables: one per target size, never pooled.

The neighbour serves its one size once beside each of the target's sizes, in the target's
order. Its headline samples (peak_throughput...) carry no label naming the target size: the
report pairs them as the co-location analysis does (analysis.colocation.paired_points) and
groups them apart; runs that cannot be paired stay pooled, labelled so.
"""

from __future__ import annotations

from tests.unit.test_web_report import RUN, _store_of
from virtbench.analysis import colocation as coloc
from virtbench.analysis import groups as groups_mod
from virtbench.analysis.colocation import BESIDE_LABEL, UNPAIRED, lockstep_points, paired_points
from virtbench.report.core.results import suite_sections
from virtbench.report.data import ReportData
from virtbench.runner.describe import describe
from virtbench.workloads.base import Sample

TC = "httperf-sweep"
SIZES = (1, 30, 100)
KIND = {"scenario_kind": "different", "net_path": "loopback"}


def _peak(value: float, role: str, size: int, valid: bool = True) -> Sample:
    labels = {**KIND, "file_size_kb": size, "peak_step": 3}
    if not valid:
        labels["invalid"] = "no valid step"
    return Sample("peak_throughput", value, "req/s", True, role, labels)


def _cell(beside: list[float], scale: float = 1.0) -> list[Sample]:
    """A different:50 cell: the target's sweeps of SIZES, then the neighbour's 50 KB runs
    (one per target size when the cell completed), as the runner stores them."""
    out = [_peak(9000.0 * scale / kb**0.5, "target", kb) for kb in SIZES]
    return out + [_peak(v * scale, "neighbour-1", 50) for v in beside]


def _cells(*reps: list[Sample]) -> list[tuple]:
    return [("native", "web", TC, "different:50", i + 1, s) for i, s in enumerate(reps)]


def _groups(tmp_path, *reps: list[Sample]) -> dict[tuple, groups_mod.Group]:
    data = ReportData.load(_store_of(tmp_path, _cells(*reps)), RUN)
    return {
        (g.key.role, g.key.dim(BESIDE_LABEL)): g
        for g in data.groups
        if g.key.metric == "peak_throughput"
    }


def test_paired_points_by_lockstep_step_by_order_or_not_at_all():
    target = [(0, "1KB"), (1, "1KB"), (2, "30KB"), (3, "30KB")]
    assert paired_points([1, 2, None, 9], target) == ["1KB", "30KB", None, None]
    headline = [(None, "1KB"), (None, "30KB"), (None, "100KB")]
    assert paired_points([None, None, None], headline) == ["1KB", "30KB", "100KB"]
    # a cell stopped part-way: fewer runs than target sizes cannot be told apart
    assert paired_points([None, None], headline) is None
    assert paired_points([], headline) is None


def test_lockstep_points_never_pair_by_order():
    # per-step samples (colocation_steps) pair by lockstep step alone: as many steps in each
    # sweep is no sign that they stepped together
    target = [(0, "1KB"), (1, "30KB")]
    assert lockstep_points([1, 0, None], target) == ["30KB", "1KB", None]
    assert lockstep_points([None, None], target) is None
    assert lockstep_points([0, 1], [(None, "1KB"), (None, "30KB")]) is None
    assert paired_points([None, None], [(None, "1KB"), (None, "30KB")]) == ["1KB", "30KB"]


def test_neighbour_headline_is_split_by_the_target_size_it_ran_beside(tmp_path):
    # before: one neighbour row, n = 6, mean of runs beside 1 KB and beside 100 KB
    gs = _groups(tmp_path, _cell([7000.0, 5000.0, 3000.0]), _cell([7200.0, 5200.0, 3200.0]))
    assert ("neighbour-1", None) not in gs
    assert gs[("neighbour-1", 1)].values == [7000.0, 7200.0]
    assert gs[("neighbour-1", 30)].values == [5000.0, 5200.0]
    assert gs[("neighbour-1", 100)].values == [3000.0, 3200.0]
    # the neighbour's own size stays in its dimensions; the target's rows are untouched
    assert gs[("neighbour-1", 30)].labels["file_size_kb"] == 50
    assert gs[("neighbour-1", 30)].key.dims[-1] == (BESIDE_LABEL, 30)
    assert all(g.key.dim(BESIDE_LABEL) is None for (role, _b), g in gs.items() if role == "target")


def test_an_invalid_run_keeps_its_place_in_the_order(tmp_path):
    gs = _groups(tmp_path, [*_cell([7000.0, 0.0, 3000.0])[:4], _peak(0.0, "neighbour-1", 50, False),
                            _peak(3000.0, "neighbour-1", 50)])  # fmt: skip
    assert gs[("neighbour-1", 30)].values == [] and gs[("neighbour-1", 30)].n_invalid == 1
    assert gs[("neighbour-1", 100)].values == [3000.0]


def test_runs_that_cannot_be_paired_stay_pooled_and_say_so(tmp_path):
    # repetition 2 stopped part-way: two neighbour runs beside three target sizes. Which two?
    # Not guessed: pooled under "unknown", apart from repetition 1's paired runs
    stopped = _cell([7100.0, 5100.0])
    gs = _groups(tmp_path, _cell([7000.0, 5000.0, 3000.0]), stopped)
    assert gs[("neighbour-1", UNPAIRED)].values == [7100.0, 5100.0]
    assert gs[("neighbour-1", 1)].values == [7000.0]
    assert gs[("neighbour-1", 100)].values == [3000.0]


def test_neighbours_serving_the_targets_sizes_are_not_relabelled():
    # identical / heterogeneous: the neighbour serves the target's sizes, its file size says
    # which run is which; per-step samples (told apart by their lockstep step), a target of
    # one size and rows of other scenarios (no co-location kind) are never paired
    dims = {TC: {"file_size_kb", "net_path", "step", "error_class"}}
    rows = []
    for role in ("target", "neighbour-1"):
        rows += [_row(role, {**KIND, "scenario_kind": "identical", "file_size_kb": kb})
                 for kb in SIZES]  # fmt: skip
    # a heterogeneous neighbour's one failed step, where the target's failed elsewhere
    err = {**KIND, "error_class": "fd-unavail", "lockstep_step": 9}
    failed = (("target", 1, 4), ("target", 30, 2), ("neighbour-1", 1, 9))
    rows += [_row(r, {**err, "file_size_kb": kb, "step": s}, "errors_by_class", "h/1")
             for r, kb, s in failed]  # fmt: skip
    rows += [_row("neighbour-1", {"file_size_kb": 50}, cell="o/1")]
    rows += [_row("target", {"file_size_kb": kb}, cell="o/1") for kb in SIZES]
    assert coloc.beside_targets(rows, dims, PRIMARY) == [None] * len(rows)


def _row(
    role: str, labels: dict, metric: str = "peak_throughput", cell: str = "c/1", tc: str = TC
) -> dict:
    return {"cell_id": cell, "test_case": tc, "role": role, "metric": metric, "labels": labels}


DIMS = {
    TC: {"file_size_kb", "net_path", "step", "error_class", "phase"},
    "wrk-max": {"file_size_kb", "connections", "error_class"},
}
PRIMARY = {TC: "peak_throughput", "wrk-max": "requests_per_s"}


def test_identical_neighbour_that_stopped_after_its_first_size_is_not_a_different_size_one():
    # identical scenario, target served 1, 30, 100 KB; the neighbour's server died at 30 KB:
    # its 1 KB headline is identified by its own file size, yet it got 'beside target: unknown'
    kind = {"scenario_kind": "identical"}
    rows = [_row("target", {**kind, "file_size_kb": kb}) for kb in (1, 30, 100)]
    rows.append(_row("neighbour-1", {**kind, "file_size_kb": 1}))
    assert coloc.beside_targets(rows, DIMS, PRIMARY)[-1] is None


WRK = {"scenario_kind": "different", "connections": 32}


def _wrk(role: str, size: int, step: int, metric: str = "requests_per_s", **more) -> dict:
    labels = {**WRK, "file_size_kb": size, "lockstep_step": step, **more}
    return _row(role, labels, metric, tc="wrk-max")


def test_conditional_metric_of_a_different_size_neighbour_is_not_paired_by_count():
    # wrk-max, different:50, lockstep: errors_by_class is stored only for runs with errors.
    # Target errors at 1 and 100 KB; neighbour errors in its runs beside 30 and 100 KB
    # (lockstep steps 1 and 2). Equal counts (2 == 2): were paired 1st->1 KB, 2nd->100 KB.
    err = {"error_class": "timeout"}
    rows = [_wrk("target", kb, s, "errors_by_class", **err) for kb, s in ((1, 0), (100, 2))]
    rows += [_wrk("neighbour-1", 50, s, "errors_by_class", **err) for s in (1, 2)]
    assert coloc.beside_targets(rows, DIMS, PRIMARY)[2:] in ([30, 100], [coloc.UNPAIRED] * 2)


def test_lockstep_rows_are_placed_by_the_cells_step_as_the_target_headline_records_it():
    # the same cell with the target's headline (stored at every step): the neighbour's rows
    # are placed by their lockstep step, its conditional ones too, and named by file size
    err = {"error_class": "timeout"}
    rows = [_wrk("target", kb, s) for s, kb in enumerate(SIZES)]
    rows += [_wrk("neighbour-1", 50, s) for s in range(3)]
    rows += [_wrk("target", kb, s, "errors_by_class", **err) for kb, s in ((1, 0), (100, 2))]
    rows += [_wrk("neighbour-1", 50, s, "errors_by_class", **err) for s in (1, 2)]
    # the neighbour's wrk client, told apart by the neighbour it loaded
    rows += [_wrk("client", 50, s, "client_cpu_pct", client_of="neighbour-1") for s in (2, 0)]
    got = coloc.beside_targets(rows, DIMS, PRIMARY)
    assert got[3:6] == [1, 30, 100]
    assert got[8:10] == [30, 100]
    assert got[10:] == [100, 1]
    assert got[:3] == [None] * 3 and got[6:8] == [None] * 2  # the target's own rows


def test_a_step_the_target_has_no_headline_at_is_not_guessed():
    rows = [_wrk("target", kb, s) for s, kb in ((0, 1), (1, 30))]  # stopped before 100 KB
    rows += [_wrk("neighbour-1", 50, s) for s in range(3)]
    assert coloc.beside_targets(rows, DIMS, PRIMARY)[2:] == [1, 30, coloc.UNPAIRED]


def test_a_run_figure_follows_the_headline_and_a_conditional_one_is_not_paired_by_count():
    # no lockstep steps (older stores): only rows stored with every run, as the headline is,
    # are paired by their order; a metric stored for some runs only is not, even when its
    # count equals the target's (two error classes in one run, one in another: 3 == 3)
    sizes = {**KIND, "file_size_kb": 50}
    rows = [_row("target", {**KIND, "file_size_kb": kb}) for kb in SIZES]
    rows += [_row("neighbour-1", sizes) for _kb in SIZES]
    rows += [_row("neighbour-1", sizes, "steps") for _kb in SIZES]
    rows += [_row("neighbour-1", sizes, "retries") for _kb in SIZES[:2]]
    rows += [_row("neighbour-1", {**sizes, "error_class": c}, "errors_by_class")
             for c in ("timeout", "reset", "timeout")]  # fmt: skip
    got = coloc.beside_targets(rows, DIMS, PRIMARY)
    assert got[3:9] == [1, 30, 100] * 2
    assert got[9:] == [coloc.UNPAIRED] * 5


def test_a_target_that_stopped_after_one_size_has_its_neighbours_run_paired(tmp_path):
    # the co-location section pairs one run with one target size (cell_stats); the tables
    # did not: that run sat in a row of its own, pooled, named by no target size
    gs = _groups(
        tmp_path, _cell([7000.0, 5000.0, 3000.0]), _cell([7100.0])[:1] + _cell([7100.0])[3:]
    )
    assert gs[("neighbour-1", 1)].values == [7000.0, 7100.0]
    assert ("neighbour-1", None) not in gs and ("neighbour-1", UNPAIRED) not in gs


def _wrk_sample(value: float, role: str, size: int, step: int) -> Sample:
    labels = {**WRK, "file_size_kb": size, "lockstep_step": step}
    return Sample("requests_per_s", value, "req/s", True, role, labels)


def test_wrk_max_rows_name_the_target_file_size_in_numeric_order(tmp_path):
    # were "beside target connections=32, file_size_kb=1", sorted as text (1, 100, 30)
    sizes = (1, 30, 100)
    reps = [[_wrk_sample(9000.0 / kb, "target", kb, s) for s, kb in enumerate(sizes)]
            + [_wrk_sample(3000.0 - s, "neighbour-1", 50, s) for s in range(3)]]  # fmt: skip
    cells = [("native", "web", "wrk-max", "different:50", 1, reps[0])]
    data = ReportData.load(_store_of(tmp_path, cells), RUN)
    there = [g.key.dim(BESIDE_LABEL) for g in data.groups if g.key.role == "neighbour-1"]
    assert there == [1, 30, 100]
    text = str(suite_sections(data)[0].html)
    assert "connections=32, file_size_kb" not in text
    at = [text.index(f"beside target {kb} KB") for kb in sizes]
    assert at == sorted(at)


def test_other_metrics_table_names_the_target_size(tmp_path):
    cells = _cells(_cell([7000.0, 5000.0, 3000.0]), _cell([7100.0, 5100.0]))
    data = ReportData.load(_store_of(tmp_path, cells), RUN)
    (sec,) = suite_sections(data)
    text = str(sec.html)
    others = text.split("Other metrics and roles")[1]
    for kb in SIZES:
        assert f"beside target {kb} KB" in others
    assert "beside target: unknown (runs not paired)" in others
    assert "split by the target size it ran beside" in others
    assert "could not be paired" in others
    assert "stopped after one size, its one run beside that size" in others


def test_description_of_the_fixture_declares_the_file_size():
    # the pairing compares the test case's declared points: file_size_kb must be one of them
    assert "file_size_kb" in describe([TC]).labels_of("dimension", TC)


def test_a_figure_of_the_whole_cell_names_no_target_size():
    # an environment's mean of its 1 s samples over the cell (cpu_util, mem_mib...) has no
    # sweep point: it spans every target size, it was no run beside one (and not 'unknown')
    whole = {**WRK, "stat": "mean of 1 s samples"}
    del whole["connections"]
    rows = [_wrk("target", kb, s) for s, kb in enumerate(SIZES)]
    rows += [_wrk("neighbour-1", 50, s) for s in range(3)]
    rows += [_row(role, whole, "cpu_util", tc="wrk-max") for role in ("target", "neighbour-1")]
    assert coloc.beside_targets(rows, DIMS, PRIMARY)[-1] is None
