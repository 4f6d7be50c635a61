"""Per-step co-location views (analysis/colocation_steps.py) and their figure builders
(report/suites/colocation/steps.py, roles.py, figures.startup_base, svg markers)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from virtbench.analysis import colocation_steps as cs
from virtbench.report import svg
from virtbench.report.suites.colocation import figures, roles, steps
from virtbench.runner.describe import describe

PARAMS = {"mode": "capacity", "start_fraction": 0.1, "step_fraction": 0.1}


def _row(scenario, role, metric, step, value, size=1, rep=1, valid=True, why="", cell=None, **lab):
    labels = {"step": step, "offered_rate": 100.0 * (step + 1), "file_size_kb": size, **lab}
    return {
        "platform": "container",
        "test_case": "httperf-sweep",
        "scenario": scenario,
        "role": role,
        "metric": metric,
        "value": value,
        "valid": valid,
        "invalid_reason": why or None,
        "repetition": rep,
        "cell_id": cell or f"{scenario}/{rep}",
        "labels": labels,
        "unit": "req/s",
    }


def _sweep(scenario, role="target", size=1, rep=1, values=(100, 200, 300, 250), bad=(3,), **lab):
    return [
        _row(scenario, role, "reply_rate", i, v, size, rep, i not in bad, "overloaded", **lab)
        for i, v in enumerate(values)
    ]


def test_invalid_steps_are_kept_flagged_and_sizes_never_pooled():
    rows = _sweep("solo") + _sweep("solo", size=50, values=(10, 20, 30, 40), bad=())
    pts = cs.sweep_points(rows, x="offered")
    one = pts[("container", "httperf-sweep", "solo", "target", 1)]
    assert [p.mean for p in one] == [100, 200, 300, 250]  # the fall after the peak stays
    assert one[3].invalid == "overloaded" and one[2].invalid is None
    assert [p.x for p in one] == [100.0, 200.0, 300.0, 400.0]
    assert [p.mean for p in pts[("container", "httperf-sweep", "solo", "target", 50)]] == [
        10,
        20,
        30,
        40,
    ]


def test_step_mean_over_repetitions_prefers_valid_ones_with_spread():
    rows = _sweep("solo", rep=1, values=(100, 200, 300, 250)) + _sweep(
        "solo", rep=2, values=(120, 220, 280, 260), bad=()
    )
    pts = cs.sweep_points(rows)[("container", "httperf-sweep", "solo", "target", 1)]
    assert (pts[0].mean, pts[0].low, pts[0].high, pts[0].n) == (110, 100, 120, 2)
    # step 3: invalid in rep 1, valid in rep 2 -> the valid one, not flagged
    assert (pts[3].mean, pts[3].n, pts[3].invalid) == (260, 1, None)


def test_intensity_axis_from_the_recorded_sweep_parameters():
    rows = _sweep("identical", env_params=PARAMS)
    pts = cs.sweep_points(rows)[("container", "httperf-sweep", "identical", "target", 1)]
    assert [round(p.x) for p in pts] == [10, 20, 30, 40]


def _series(cell, role, metric, points, scenario="solo"):
    return [
        {
            "cell_id": cell,
            "platform": "container",
            "test_case": "httperf-sweep",
            "scenario": scenario,
            "repetition": 1,
            "role": role,
            "metric": metric,
            "t": t,
            "value": v,
        }
        for t, v in points
    ]


def test_env_metrics_averaged_over_each_steps_window():
    samples = _sweep("solo", bad=())
    # steps end at t = 2, 4, 6, 8: windows (0,2] (2,4] (4,6] (6,8]
    series = _series("solo/1", "target", "reply_rate.1KB", [(2, 1), (4, 1), (6, 1), (8, 1)])
    series += _series("solo/1", "target", "cpu_util", [(1, 10), (2, 20), (3, 30), (4, 50)])
    series += _series("solo/1", "target", "cpu_util", [(5, 60), (6, 60), (7, 90), (8, 90)])
    out = cs.env_by_step(samples, series)
    cpu = out[(("container", "httperf-sweep", "solo", "target", 1), "cpu_util")]
    assert [p.mean for p in cpu] == [15, 40, 60, 90]
    assert [p.x for p in cpu] == [100.0, 200.0, 300.0, 400.0]  # the target's offered rate


def test_env_step_x_is_the_mean_offered_rate_over_repetitions():
    samples, series = [], []
    for rep, base in ((1, 100.0), (2, 140.0)):
        cell = f"solo/{rep}"
        for i in range(2):
            row = _row("solo", "target", "reply_rate", i, 1, rep=rep, cell=cell)
            row["labels"]["offered_rate"] = base * (i + 1)
            samples.append(row)
        series += _series(cell, "target", "reply_rate.1KB", [(2, 1), (4, 1)])
        series += _series(cell, "target", "cpu_util", [(1, 10 * rep), (3, 20 * rep)])
    out = cs.env_by_step(samples, series)
    cpu = out[(("container", "httperf-sweep", "solo", "target", 1), "cpu_util")]
    assert [p.x for p in cpu] == [120.0, 240.0]  # not the last repetition's 140 / 280
    assert [p.mean for p in cpu] == [15, 30]


def test_degradation_table_matches_offered_rates_and_flags_invalid_steps():
    rows = []
    cells = (("solo", (100, 200, 300), 1.0), ("idle-neighbours:3", (90, 180, 240), 2.0))
    for scenario, rates, rt in cells:
        for i, v in enumerate(rates):
            bad = scenario != "solo" and i == 2
            rows.append(_row(scenario, "target", "reply_rate", i, v, valid=not bad, why="x"))
            rows.append(_row(scenario, "target", "reply_time_ms", i, rt, valid=not bad, why="x"))
            rows.append(_row(scenario, "target", "transfer_time_ms", i, 0.0))
    out = cs.degradation_rows(rows)
    # solo's 100/200/300 req/s steps against the neighbour cell's same-rate steps
    assert [(r.step, r.scenario) for r in out] == [(i, "idle-neighbours:3") for i in range(3)]
    first = out[0]
    assert first.throughput[:2] == (100, 90)
    assert round(first.throughput[2], 6) == 10.0  # 10 % fewer replies
    assert first.reply_ms == (1.0, 2.0, 100.0)  # reply time doubled: +100 %
    assert first.transfer_ms[2] is None  # solo 0 ms: no ratio
    assert out[-1].invalid and not first.invalid


def test_concurrent_sweeps_pair_by_time_not_by_size():
    series = _series("d/1", "target", "reply_rate.1KB", [(2, 1), (4, 1)], "different:50")
    series += _series("d/1", "neighbour-1", "reply_rate.50KB", [(2, 1), (4, 1)], "different:50")
    series += _series("d/1", "target", "reply_rate.50KB", [(6, 1), (8, 1)], "different:50")
    out = cs.concurrent_sweeps(series)
    key = ("container", "httperf-sweep", "different:50")
    assert out[(*key, 1)] == {("neighbour-1", 50)}
    assert out[(*key, 50)] == set()  # the target's own 50 KB sweep ran alone


def _data(samples, series=(), platforms=("container",)):
    return SimpleNamespace(
        samples=samples,
        series=list(series),
        platforms=list(platforms),
        colour=lambda p: "#000",
        cells=[],
        description=describe(["httperf-sweep", "wrk-max"]),
    )


def test_pair_chart_draws_neighbour_at_its_own_size_and_the_sum():
    rows = _sweep("different:50", bad=(3,), env_params=PARAMS)
    rows += _sweep("different:50", "neighbour-1", size=50, bad=(), env_params=PARAMS)
    series = _series("different:50/1", "target", "reply_rate.1KB", [(2, 1), (4, 1)])
    series += _series("different:50/1", "neighbour-1", "reply_rate.50KB", [(2, 1), (4, 1)])
    for p in series:
        p["scenario"] = "different:50"
    data = _data(rows, series)
    charts = steps.pair_charts(data, cs.sweep_points(rows))
    assert len(charts) == 1
    chart = charts[0]
    assert 'data-legend="neighbour-1 (50 KB)"' in chart
    assert f'data-series="{steps.SUM_LINE}"' in chart
    assert chart.count('data-invalid="target"') == 1  # the fall is drawn, marked
    # and so is the sum's, flagged with the environment whose step was invalid: it stopped
    # where saturation began (native pairs' clients run out of sockets past it)
    assert chart.count(f'data-invalid="{steps.SUM_LINE}"') == 1
    assert "target: overloaded" in chart


def test_idle_neighbour_bars_normalized_per_size():
    def peak(scenario, v, size):
        r = _row(scenario, "target", "peak_throughput", 0, v, size)
        r["labels"] = {"file_size_kb": size}
        return r

    rows = [peak("solo", 50, 50), peak("idle-neighbours:3", 50, 50), peak("solo", 1000, 1)]
    rows += [peak("idle-neighbours:3", 900, 1), peak("solo", 80, 10), peak("solo", 20, 200)]
    charts, table = roles.idle_neighbours(_data(rows), {"httperf-sweep": "peak_throughput"})
    assert len(charts) == 1
    # sizes in numeric order (1, 10, 50, 200), not as text (1, 10, 200, 50)
    sizes = [int(x) for x in re.findall(r">(\d+) KB<", charts[0])]  # label and its tooltip
    assert list(dict.fromkeys(sizes)) == [1, 10, 50, 200]
    assert "900 (+10.0 %)" in table and "50 (+0.0 %)" in table
    assert "0.9 solo" not in charts[0] and 'data-series="3 idle"' in charts[0]


def test_role_bars_and_cov_cover_every_role_and_solo_from_series():
    def summ(scenario, role, metric, v, cov):
        r = _row(scenario, role, metric, 0, v)
        r["labels"] = {"stdev": v * cov, "cov": cov}
        return r

    rows = [summ("identical", "target", "cpu_util", 40, 0.1)]
    rows += [summ("identical", "neighbour-1", "cpu_util", 30, 0.3)]
    series = _series("solo/1", "target", "cpu_util", [(1, 10), (2, 30)])
    data = _data(rows, series)
    (cpu,) = [c for c in roles.role_bars(data) if "CPU utilization" in c]
    assert 'data-series="neighbour-1"' in cpu and "solo" in cpu
    (cov,) = [c for c in roles.cov_bars(data) if "of CPU" in c]
    assert 'data-legend="neighbour-1"' in cov


def test_startup_base_is_the_undisturbed_mean_not_the_median():
    # the target served ~100 before the newcomers, little while they booted
    pts = [(t, 100.0) for t in range(1, 6)] + [(t, 5.0) for t in range(6, 16)]
    news = [{"value": 3.0, "labels": {"started_at_s": 5.5, "ready_at_s": 8.5}}]
    base, how = figures.startup_base(pts, news)
    assert base == 100.0 and "before the first start" in how
    # the old median (5.0) made the first seconds read 20x


def test_line_chart_marks_invalid_points_and_wraps_long_legends():
    line = svg.Line("a", "#000", [(1, 1, None, None), (2, 3, None, None)], invalid={2: "why"})
    many = [svg.Line(f"newcomer number {i} started at 1.0 s", "#111", []) for i in range(6)]
    chart = svg.line_chart("t", [line, *many], "x", "y")
    assert chart.count("data-invalid") == 1 and "invalid: why" in chart
    assert svg.legend_rows([ln.name for ln in many], 70, 760) > 1
    assert (
        'height="'
        + str(300 + 15 * (svg.legend_rows([ln.name for ln in [line, *many]], 70, 760) - 1))
        in chart
    )


def test_a_single_fixed_rate_point_does_not_split_the_axes():
    from virtbench.report.core.curves import split_curves

    curve = svg.Line("native · solo", "#000", [(1, 15000, None, None), (2, 14000, None, None)])
    point = svg.Line("native · many:2", "#111", [(1, 800, None, None)])
    vm = svg.Line("vm · solo", "#222", [(1, 700, None, None), (2, 900, None, None)])
    assert [len(p) for _t, p in split_curves("t", [curve, point])] == [2]
    parts = split_curves("t", [curve, point, vm])  # the VM curve splits; the point joins it
    assert [[ln.name for ln in p] for _t, p in parts] == [
        ["native · solo"],
        ["vm · solo", "native · many:2"],
    ]


def _wrk_summary(scenario, role, metric, size, value, cov, rep=1):
    """A per-point summary row of a wrk-max cell serving 1 and 70 KB (one cell per scenario)."""
    labels = {"file_size_kb": size, "connections": 32, "stat": "mean of 1 s samples"}
    return {
        "platform": "container",
        "test_case": "wrk-max",
        "scenario": scenario,
        "role": role,
        "metric": metric,
        "value": value,
        "valid": True,
        "repetition": rep,
        "cell_id": f"{scenario}/{rep}",
        "labels": labels | {"stdev": value * cov, "cov": cov, "n": 7},
        "unit": "µs/exe",
    }


def _wrk_rows():
    rows = []
    for scenario in ("solo", "identical"):
        roles_ = ("target",) if scenario == "solo" else ("target", "neighbour-1")
        for role in roles_:
            rows += [_wrk_summary(scenario, role, "cpu_us_per_exe", 1, 40.0, 0.05)]
            rows += [_wrk_summary(scenario, role, "cpu_us_per_exe", 70, 400.0, 0.02)]
            rows += [_wrk_summary(scenario, role, "cpu_util", 1, 45.0, 0.1)]
            rows += [_wrk_summary(scenario, role, "cpu_util", 70, 25.0, 0.3)]
    return rows


def test_role_and_cov_bars_one_chart_per_file_size_never_pooled():
    data = _data(_wrk_rows())
    per_exe = [c for c in roles.role_bars(data) if "CPU time per execution" in c]
    assert len(per_exe) == 2  # one per size, not one mean of 1 and 70 KB (220 µs/exe)
    small, big = per_exe
    assert "container · wrk-max · 1 KB: CPU time" in small and "wrk-max · 70 KB:" in big
    assert f"target · identical: {svg.num(40.0)} µs/exe" in small
    assert f"neighbour-1 · identical: {svg.num(400.0)} µs/exe" in big
    assert f"{svg.num(220.0)} µs/exe" not in small + big
    covs = [c for c in roles.cov_bars(data) if "of CPU" in c]
    assert len(covs) == 2
    assert f"target · solo: {svg.num(0.1)} CoV" in covs[0]
    assert f"target · solo: {svg.num(0.3)} CoV" in covs[1]


def test_env_metrics_table_rows_per_file_size():
    html_ = figures.env_metrics_table(_data(_wrk_rows()))
    assert "wrk-max · 1 KB · 32 connections" in html_ and "wrk-max · 70 KB" in html_
    assert f"µs/exe {figures._fmt([40.0])}" in html_ and f"µs/exe {figures._fmt([400.0])}" in html_


def test_per_point_summaries_group_by_size_not_by_their_spread():
    from virtbench.analysis import groups

    rows = [r | {"suite": "web", "unit": "%", "higher_is_better": False} for r in _wrk_rows()]
    rows += [
        r | {"suite": "web", "unit": "%", "higher_is_better": False, "repetition": 2}
        for r in _wrk_rows()
    ]
    for r in rows[len(rows) // 2 :]:
        r["cell_id"] += "b"
        r["labels"] = r["labels"] | {"stdev": 1.5, "n": 6}  # another repetition's spread
    built = groups.build(rows, describe(["wrk-max"]))
    cpu = [g for g in built if g.key.metric == "cpu_util" and g.key.scenario == "solo"]
    assert sorted(g.key.dims for g in cpu) == [(("file_size_kb", 1),), (("file_size_kb", 70),)]
    assert all(len(g.values) == 2 for g in cpu)


def test_series_fallback_takes_the_cells_one_point_and_never_pools_two():
    """An old solo cell with no summaries: its series stand in when it served one size (under
    that size's chart); a cell that served 1 and 70 KB cannot be split, so it draws no bar."""
    rows = _wrk_rows()
    one = _wrk_summary("solo", "target", "requests_per_s", 1, 5000.0, 0.0) | {"cell_id": "old/1"}
    one["labels"] = {"file_size_kb": 1, "connections": 32}
    rows += [one]
    two = [dict(one, cell_id="old2/1", scenario="solo-two")]
    two += [
        dict(
            one, cell_id="old2/1", scenario="solo-two", labels=one["labels"] | {"file_size_kb": 70}
        )
    ]
    rows += two
    series = _series("old/1", "target", "cpu_util", [(1, 10), (2, 30)], scenario="solo-old")
    series += _series("old2/1", "target", "cpu_util", [(1, 10), (2, 90)], scenario="solo-two")
    for p in series:
        p["test_case"] = "wrk-max"
    small, big = [c for c in roles.role_bars(_data(rows, series)) if "CPU utilization" in c]
    assert f"target · solo-old: {svg.num(20.0)} CPU %" in small and "solo-old" not in big
    assert "solo-two" not in small + big


def test_summaries_of_a_point_whose_target_sample_was_invalid_are_left_out():
    """A cell's 1 s summaries are stored unflagged; the target's own sample at that point says
    whether the scene was as planned (a size whose window the neighbour did not share, a cell
    whose neighbour died): its CPU, µs/exe and CoV must not stand for the scenario."""
    rows = _wrk_rows()
    head = _wrk_summary("identical", "target", "requests_per_s", 70, 900.0, 0.0)
    head["labels"] = {"file_size_kb": 70, "connections": 32, "client_nofile": 4096}
    head |= {"valid": False, "invalid_reason": "step window not shared: neighbour-1 ..."}
    rows.append(head)
    data = _data(rows)
    small, big = [c for c in roles.role_bars(data) if "CPU time per execution" in c]
    assert "target · identical" in small and "neighbour-1 · identical" in small
    assert "identical" not in big and "target · solo" in big
    covs = [c for c in roles.cov_bars(data) if "of CPU" in c]
    assert "identical" in covs[0] and "identical" not in covs[1]
    table = figures.env_metrics_table(data)
    # the 70 KB rows stay, with no means, saying why: flagged, never silently dropped
    rows70 = [r for r in re.findall(r"<tr>(.*?)</tr>", table, re.S) if "70 KB" in r]
    assert len(rows70) == 2 and all("left out: the target" in r for r in rows70)
    assert not any("±" in r or "µs/exe" in r for r in rows70)


def test_idle_neighbour_degradation_is_positive_when_a_lower_is_better_figure_rose():
    # a boot time of 12 s beside idle neighbours against 10 s alone is 20 % worse, not better
    def boot(scenario, v):
        r = _row(scenario, "target", "boot_s", 0, v) | {"test_case": "boot", "higher_is_better": 0}
        r["labels"] = {}
        return r

    _charts, table = roles.idle_neighbours(
        _data([boot("solo", 10.0), boot("idle-neighbours:1", 12.0)]), {"boot": "boot_s"}
    )
    assert "12 (+20.0 %)" in table


def test_pair_sum_is_the_mean_of_per_repetition_sums_over_repetitions_valid_in_all():
    # step 0: the target is valid in both repetitions, the neighbour in repetition 1 only
    rows = _sweep("identical", rep=1, values=(100, 200), bad=())
    rows += _sweep("identical", rep=2, values=(120, 220), bad=())
    rows += _sweep("identical", "neighbour-1", rep=1, values=(10, 20), bad=())
    rows += _sweep("identical", "neighbour-1", rep=2, values=(12, 22), bad=(0,))
    (chart,) = steps.pair_charts(_data(rows), cs.sweep_points(rows, x="offered"))
    sums = [t for t in chart.split("<title>") if t.startswith(steps.SUM_LINE)]
    # step 0: rep 1 alone, 100 + 10 (not the target's 110 over reps 1-2 plus 10 from rep 1);
    # step 1: the mean of 220 and 242
    assert [s.split("→ ")[1].split("<")[0] for s in sums] == [svg.num(110.0), svg.num(231.0)]


def test_env_step_figures_carry_the_targets_invalid_step_and_never_average_it_in():
    """A step whose target sample is stored invalid (a window the neighbour did not share, an
    overload) is no valid CPU figure: averaged with valid repetitions it would pass as one."""
    shared = "step window not shared: neighbour-1 stopped before it"
    samples, series = [], []
    for rep, cpu, bad in (
        (1, (10, 20, 30, 40), {3: shared}),
        (2, (12, 50, 32, 44), {1: "x", 3: shared}),
    ):
        cell = f"identical/{rep}"
        for i in range(4):
            samples.append(
                _row(
                    "identical",
                    "target",
                    "reply_rate",
                    i,
                    100,
                    rep=rep,
                    valid=i not in bad,
                    why=bad.get(i, ""),
                )
            )
        series += _series(cell, "target", "reply_rate.1KB", [(2, 1), (4, 1), (6, 1), (8, 1)])
        for role, k in (("target", 1), ("neighbour-1", 2)):
            pts = [(2 * i + 1, k * v) for i, v in enumerate(cpu)]
            series += _series(cell, role, "cpu_util", pts)
    for p in series:
        p["scenario"] = "identical"
    out = cs.env_by_step(samples, series)
    sweep = ("container", "httperf-sweep", "identical")
    cpu = out[((*sweep, "target", 1), "cpu_util")]
    # step 1: repetition 2's invalid 50 left out; step 3: invalid in both, kept and flagged
    assert [(p.mean, p.invalid) for p in cpu] == [(11, None), (20, None), (31, None), (42, shared)]
    assert out[((*sweep, "neighbour-1", 1), "cpu_util")][3].invalid == shared
    (chart,) = [c for c in steps.env_rate_charts(_data(samples, series)) if "CPU utilization" in c]
    assert chart.count('data-invalid="identical · target"') == 1
    assert chart.count('data-invalid="identical · neighbour-1"') == 1
    assert f"invalid: {shared}" in chart


def test_intensity_of_a_load_pct_run_is_its_load_not_the_sweeps_first_fraction():
    # identical:load=50 runs one fixed-rate step (step 0) at 50 % of each solo peak; its
    # recorded params still hold the sweep defaults (start_fraction 0.1)
    rows = _sweep("identical:load=50", values=(100,), bad=(), env_params=PARAMS, load_pct=50.0)
    pts = cs.sweep_points(rows)[("container", "httperf-sweep", "identical:load=50", "target", 1)]
    assert [p.x for p in pts] == [50.0]


def test_a_different_neighbour_is_one_sweep_per_target_size_never_pooled():
    # different:100 with file_sizes = [1, 50]: the neighbour sweeps 100 KB twice in one cell,
    # once beside each of the target's sizes (scenarios/colocation.py Different.plans)
    sc, cell = "different:100", "different:100/1"
    rows = []
    for k, (size, target, neighbour) in enumerate(
        ((1, (100, 200), (10, 20)), (50, (5, 6), (30, 40)))
    ):
        for i in range(2):
            step = {"lockstep_step": 2 * k + i, "env_params": PARAMS}
            rows.append(_row(sc, "target", "reply_rate", i, target[i], size, cell=cell, **step))
            rows.append(
                _row(sc, "neighbour-1", "reply_rate", i, neighbour[i], 100, cell=cell, **step)
            )
    pts = cs.sweep_points(rows)
    key = ("container", "httperf-sweep", sc)
    by_one = pts[(*key, cs.beside_role("neighbour-1", 1), 100)]
    by_fifty = pts[(*key, cs.beside_role("neighbour-1", 50), 100)]
    assert [(p.mean, p.n) for p in by_one] == [(10, 1), (20, 1)]
    assert [(p.mean, p.n) for p in by_fifty] == [(30, 1), (40, 1)]
    series = _series(cell, "target", "reply_rate.1KB", [(2, 1), (4, 1)], sc)
    series += _series(cell, "target", "reply_rate.50KB", [(6, 1), (8, 1)], sc)
    series += _series(cell, "neighbour-1", "reply_rate.100KB", [(2, 1), (4, 1), (6, 1), (8, 1)], sc)
    one, fifty = steps.pair_charts(_data(rows, series), pts)
    sums = [t for t in one.split("<title>") if t.startswith(steps.SUM_LINE)]
    assert [s.split("→ ")[1].split("<")[0] for s in sums] == [svg.num(110.0), svg.num(220.0)]
    assert 'data-legend="neighbour-1 (100 KB)"' in one and "beside" not in one
    sums = [t for t in fifty.split("<title>") if t.startswith(steps.SUM_LINE)]
    assert [s.split("→ ")[1].split("<")[0] for s in sums] == [svg.num(35.0), svg.num(46.0)]


def test_a_different_neighbours_step_is_paired_where_the_target_has_no_sample_of_its_metric():
    # errors_by_class is stored only at a step with errors (workloads/web.py record): the
    # neighbour's at its 2nd step beside 1 KB and beside 50 KB, the target's never. Its size at
    # a lockstep step is told by any of its samples there; paired by the metric's own target
    # samples, both fell back to one 'neighbour-1' sweep and were averaged as 2 repetitions
    sc, cell = "different:100", "different:100/1"
    rows = []
    for k, size in enumerate((1, 50)):
        for i in range(2):
            step = {"lockstep_step": 2 * k + i, "env_params": PARAMS}
            rows.append(_row(sc, "target", "reply_rate", i, 100, size, cell=cell, **step))
            rows.append(_row(sc, "neighbour-1", "reply_rate", i, 10, 100, cell=cell, **step))
        err = {"lockstep_step": 2 * k + 1, "env_params": PARAMS, "error_class": "fd-unavail"}
        rows.append(_row(sc, "neighbour-1", "errors_by_class", 1, 3 + k, 100, cell=cell, **err))
    pts = cs.sweep_points(rows, "errors_by_class")
    key = ("container", "httperf-sweep", sc)
    assert (*key, "neighbour-1", 100) not in pts
    assert [(p.mean, p.n) for p in pts[(*key, cs.beside_role("neighbour-1", 1), 100)]] == [(3, 1)]
    assert [(p.mean, p.n) for p in pts[(*key, cs.beside_role("neighbour-1", 50), 100)]] == [(4, 1)]


def test_series_fallback_is_for_solo_cells_of_co_located_test_cases_only():
    """A solo-peak cell (a reference, no sampler window: no summaries) and a cell of another
    suite (cpu_util only, no co-location at all) have only the cell's whole cpu_util series,
    set-up and probe included: the fallback for old solo cells drew them as a 'solo-peak'
    scenario (mean of 5 and 95 %) and as a sysbench chart in the co-location section."""
    rows = _wrk_rows()
    peak = _wrk_summary("solo-peak", "target", "requests_per_s", 1, 5000.0, 0.0)
    peak["labels"] = {"file_size_kb": 1, "connections": 32}
    other = dict(peak, cell_id="cpu/1", scenario="solo", test_case="sysbench-cpu", labels={})
    rows += [peak, other]
    series = _series("solo-peak/1", "target", "cpu_util", [(1, 5), (2, 95)], "solo-peak")
    series += _series("cpu/1", "target", "cpu_util", [(1, 99), (2, 97)])
    for p in series:
        p["test_case"] = "wrk-max" if p["cell_id"] == "solo-peak/1" else "sysbench-cpu"
    charts = roles.role_bars(_data(rows, series)) + roles.cov_bars(_data(rows, series))
    assert charts and not [c for c in charts if "solo-peak" in c or "sysbench-cpu" in c]


def test_startup_chart_does_not_normalize_bytes_across_file_sizes():
    # run cq4-1126, container · wrk-max · startup:2:vm-virtio #1: 1 KB then 70 KB, 8 s each;
    # the target's one throughput series is the bytes it sent (wrk records none per size).
    # Divided by its mean before the VMs started (1 KB), the 70 KB part read 2.9-4.8x
    # "normalized throughput" while it served 20-34 % of its solo 70 KB rate
    tx = [12.8e6, 22.5e6, 6.0e6, 3.0e6, 3.1e6, 3.2e6, 3.4e6, 3.2e6, 50e6, 84e6, 81e6, 78e6]
    cell = SimpleNamespace(
        cell_id="c/14", scenario="startup:2:vm-virtio", repetition=1, seq=14,
        platform="container", test_case="wrk-max",
    )  # fmt: skip
    series = [
        {"cell_id": "c/14", "role": "target", "metric": "net_tx_bytes_per_s", "t": t + 1.0,
         "value": v}
        for t, v in enumerate(tx)
    ]  # fmt: skip
    new = {"started_at_s": 2.0, "ready_at_s": 20.2, "env_platform": "vm-virtio"}
    samples = [
        {"cell_id": "c/14", "role": "neighbour-1", "metric": "startup_s", "value": 18.2,
         "labels": new},
        *(
            {"cell_id": "c/14", "role": "target", "metric": "requests_per_s", "value": v,
             "labels": {"file_size_kb": size, "connections": 32}}
            for size, v in ((1, 4757.0), (70, 1041.0))
        ),
    ]  # fmt: skip
    data = SimpleNamespace(cells=[cell], series=series, samples=samples, colour=lambda p: "#123")
    (chart,), _ = figures.startup_charts(data)
    assert "normalized throughput" not in chart and "÷" not in chart
    assert "1 KB, 70 KB" in chart  # says why: several sizes one after another
    # one size: the undisturbed mean is a fair 1.0 line
    data.samples = samples[:2]
    (chart,), _ = figures.startup_charts(data)
    assert "normalized throughput" in chart


def test_each_sizes_storm_is_its_own_chart_normalized_by_its_own_size():
    """One storm per size (the engine's scenes): the 70 KB storm is drawn over the 70 KB part
    only and divided by its own undisturbed bytes, not by the 1 KB part's."""
    cell = SimpleNamespace(
        cell_id="c/3", scenario="startup:2:vm-virtio", repetition=1, seq=3,
        platform="container", test_case="wrk-max",
    )  # fmt: skip
    one = [10e6, 10e6, 10e6, 5e6, 5e6, 10e6, 10e6]  # t 1..7, storm 3..5
    big = [80e6, 80e6, 80e6, 40e6, 40e6, 80e6, 80e6]  # t 11..17, storm 13..15
    series = [
        {"cell_id": "c/3", "role": "target", "metric": "net_tx_bytes_per_s", "t": t, "value": v}
        for t, v in [*zip(range(1, 8), one, strict=True), *zip(range(11, 18), big, strict=True)]
    ]  # fmt: skip

    def newcomer(size, started, ready, scene):
        labels = {"started_at_s": started, "ready_at_s": ready, "env_platform": "vm-virtio",
                  "scene_s": scene, "file_size_kb": size}  # fmt: skip
        return {"cell_id": "c/3", "role": "neighbour-1", "metric": "startup_s",
                "value": ready - started, "labels": labels}  # fmt: skip

    samples = [newcomer(1, 2.5, 5.5, [0.0, 8.0]), newcomer(70, 12.5, 15.5, [10.0, 18.0])]
    samples += [
        {"cell_id": "c/3", "role": "target", "metric": "requests_per_s", "value": v,
         "labels": {"file_size_kb": size, "connections": 32}}
        for size, v in ((1, 4757.0), (70, 1041.0))
    ]  # fmt: skip
    data = SimpleNamespace(cells=[cell], series=series, samples=samples, colour=lambda p: "#123")
    charts, note = figures.startup_charts(data)
    assert len(charts) == 2 and not note
    assert "· 1 KB" in charts[0] and "· 70 KB" in charts[1]
    for chart in charts:  # each normalized by its own size's undisturbed mean: dips to 0.5
        assert "normalized throughput" in chart and "raw" not in chart
        assert f"→ {svg.num(0.5)}<" in chart and f"→ {svg.num(8.0)}<" not in chart


def test_degradation_compares_at_solos_rate_not_at_a_step_up_to_10_percent_off():
    # solo steps at fractions of its wrk capacity (1000): 100..500 req/s; the scenario's
    # lockstep schedule at the same fractions of its solo peak (900): 90..450 req/s. Both
    # serve every request offered (unsaturated), so nothing degraded; the nearest step
    # within 10 % (90 vs 100) read "10 % fewer replies" at every step
    rows = []
    for scenario, rates in (
        ("solo", (100, 200, 300, 400, 500)),
        ("identical", (90, 180, 270, 360, 450, 540)),
    ):
        for i, rate in enumerate(rates):
            for metric, value in (("reply_rate", rate), ("reply_time_ms", 1.0 + rate / 1000)):
                row = _row(scenario, "target", metric, i, float(value))
                row["labels"]["offered_rate"] = float(rate)
                rows.append(row)
    out = cs.degradation_rows(rows)
    assert [r.x for r in out] == [100.0, 300.0, 500.0]
    for r in out:
        assert abs(r.throughput[2]) < 1e-9, r  # served all it was offered, as solo
        assert abs(r.throughput[1] - r.x) < 1e-9
        assert abs(r.reply_ms[2]) < 1e-9  # the same reply time at the same rate


def test_degradation_rows_in_numeric_size_order():
    rows = []
    for size in (10, 4, 100, 1):
        for scenario, v in (("solo", 100.0), ("identical", 80.0)):
            for i in range(3):
                rows.append(_row(scenario, "target", "reply_rate", i, v * (i + 1), size))
    sizes = list(dict.fromkeys(r.size for r in cs.degradation_rows(rows)))
    assert sizes == [1, 4, 10, 100]


def test_newcomers_start_up_time_is_tabled_per_size_the_target_served():
    """Seed 003 Fig. 14's right axis: start-up time beside a 1 kB and beside a 70 kB target
    (47 s vs 75 s for two guests in the paper): never pooled across sizes."""

    def up(size, value, rep):
        return {"cell_id": f"c/{rep}", "platform": "container", "scenario": "startup:2:vm-virtio",
                "role": "neighbour-1", "metric": "startup_s", "value": value,
                "labels": {"file_size_kb": size, "env_platform": "vm-virtio"}}  # fmt: skip

    rows = [up(70, 8.0, 1), up(1, 12.0, 1), up(1, 14.0, 2), up(70, 10.0, 2)]
    table = figures.startup_table(SimpleNamespace(samples=rows))
    assert table.index("1 KB") < table.index("70 KB")  # numeric order
    assert "13 ± 1.4 s" in table and "9 ± 1.4 s" in table
    assert figures.startup_table(SimpleNamespace(samples=rows[:0])) == ""


def test_startup_table_keeps_test_cases_apart_and_leaves_invalid_samples_out():
    """Review: the key had no test case (wrk-max and httperf-sweep beside the same storm
    were one row) and an invalid startup_s (a failed cell) counted in the mean."""

    def up(tc, value, invalid=None):
        labels = {"file_size_kb": 1, "env_platform": "vm-virtio"}
        return {"cell_id": "c/1", "platform": "container", "scenario": "startup:2:vm-virtio",
                "test_case": tc, "role": "neighbour-1", "metric": "startup_s", "value": value,
                "valid": invalid is None, "invalid_reason": invalid, "labels": labels}  # fmt: skip

    rows = [up("wrk-max", 10.0), up("httperf-sweep", 30.0), up("wrk-max", 99.0, "cell failed")]
    table = figures.startup_table(SimpleNamespace(samples=rows))
    assert "wrk-max" in table and "httperf-sweep" in table
    assert ">10 s<" in table and ">30 s<" in table and "20 ±" not in table and "99" not in table


def test_a_startup_cell_whose_newcomers_all_failed_is_still_drawn_or_counted():
    """Review: a cell with no startup_s sample (every newcomer failed to start) had a chart
    before one storm per size; now it vanished without a word."""
    cell = SimpleNamespace(
        cell_id="c/5", scenario="startup:2:vm-virtio", repetition=1, seq=5,
        platform="container", test_case="wrk-max",
    )  # fmt: skip
    series = [
        {"cell_id": "c/5", "role": "target", "metric": "net_tx_bytes_per_s", "t": t, "value": 1e7}
        for t in range(1, 8)
    ]  # fmt: skip
    data = SimpleNamespace(cells=[cell], series=series, samples=[], colour=lambda p: "#123")
    charts, note = figures.startup_charts(data)
    assert charts or "not drawn" in note


def test_startup_table_says_how_much_of_a_start_up_was_beside_the_targets_load():
    """Review: a VM newcomer starting in 18 s beside an 8 s run (2 s delay) ran mostly beside
    an idle target, while the table said 'beside the loaded target'."""
    labels = {"file_size_kb": 1, "env_platform": "vm-virtio", "under_load_s": 6.0}
    row = {"cell_id": "c/1", "platform": "container", "scenario": "startup:2:vm-virtio",
           "role": "neighbour-1", "metric": "startup_s", "value": 18.0, "test_case": "wrk-max",
           "labels": labels}  # fmt: skip
    table = figures.startup_table(SimpleNamespace(samples=[row]))
    assert "beside the target&#x27;s load" in table or "beside the target's load" in table
    assert f"{svg.num(33.3)} %" in table or "33.3 %" in table


def test_a_storm_chart_divides_by_solo_at_that_size_and_stops_when_the_target_stopped():
    """Run cq-1127 (container, startup:2:vm-virtio, 1 KB, 8 s): 2 s before the storm held one
    ramp-up reading, so the 1.0 line fell back to the mean over the scene, zeros included,
    and the chart read 3.3x; after the target's 8 s it idled while the VMs still booted, and
    those zeros looked like the storm's damage."""
    cell = SimpleNamespace(
        cell_id="c/15", scenario="startup:2:vm-virtio", repetition=1, seq=15,
        platform="container", test_case="wrk-max",
    )  # fmt: skip
    tx = [(1, 10e6), (2, 23e6), (3, 9e6), (5, 5e6), (9, 2e6), (12, 0.0), (16, 0.0)]
    series = [
        {"cell_id": "c/15", "role": "target", "metric": "net_tx_bytes_per_s", "t": t, "value": v}
        for t, v in tx
    ]  # fmt: skip
    new = {"started_at_s": 2.0, "ready_at_s": 17.0, "env_platform": "vm-virtio",
           "scene_s": [0.0, 17.2], "target_run_s": [0.0, 10.0], "file_size_kb": 1}  # fmt: skip
    samples = [
        {"cell_id": "c/15", "platform": "container", "scenario": "startup:2:vm-virtio",
         "role": "neighbour-1", "metric": "startup_s", "value": 15.0, "labels": new},
        *(
            {"cell_id": f"s/{i}", "platform": "container", "scenario": "solo",
             "test_case": "wrk-max", "role": "target", "metric": "net_tx_bytes_per_s",
             "value": v, "labels": {"file_size_kb": size, "stdev": 1.0}}
            for i, (size, v) in enumerate(((1, 23e6), (1, 23e6), (70, 246e6)))
        ),
    ]  # fmt: skip
    data = SimpleNamespace(cells=[cell], series=series, samples=samples, colour=lambda p: "#123")
    (chart,), _ = figures.startup_charts(data)
    assert "mean at 1 KB (2 run(s))" in chart  # solo's, escaped in the SVG
    target = re.findall(r"<title>target [^<]*: ([\d.]+) → ([\d.]+)</title>", chart)
    assert [t for t, _y in target] == ["1", "2", "3", "5", "9"]  # the idle tail (12, 16) cut
    assert target[1][1] == svg.num(1.0)  # 23e6 ÷ solo's 23e6, not ÷ a mean with zeros


def test_idle_neighbours_never_pool_a_test_cases_points_other_than_file_size():
    # a memory sweep beside idle neighbours: one row per block size, each against its own
    # solo (keyed by file size alone, both sizes fell into one "None KB" row, 4 KiB and 1 MiB
    # bandwidths averaged: solo 30,000, 3 idle 29,000 (+3.3 %) n=2)
    def bw(scenario, v, block):
        r = _row(scenario, "target", "bandwidth_mib_s", 0, v) | {
            "test_case": "sysbench-memory-sweep"
        }
        r["labels"] = {"block_size_bytes": block}
        return r

    rows = [bw("solo", 50000, 4096), bw("solo", 10000, 1 << 20)]
    rows += [bw("idle-neighbours:3", 45000, 4096), bw("idle-neighbours:3", 13000, 1 << 20)]
    data = _data(rows)
    data.description = describe(["sysbench-memory-sweep"])
    _charts, table = roles.idle_neighbours(data, {"sysbench-memory-sweep": "bandwidth_mib_s"})
    assert "4.5e+04 (+10.0 %)" in table and "1.3e+04 (-30.0 %)" in table
    assert "None" not in table


def _fixed_rate_storm(replies=810.0, tx_mean=1.08e6):
    """container · httperf-sweep · startup:1:vm-virtio:2:load=90 at 1 KB: one fixed-rate step
    (t 2..12) at 900 req/s (90 % of a 1,000 req/s solo peak), a VM newcomer 4..9 s."""
    cell = SimpleNamespace(
        cell_id="c/7", scenario="startup:1:vm-virtio:2:load=90", repetition=1, seq=7,
        platform="container", test_case="httperf-sweep",
    )  # fmt: skip
    tx = {1: 0.0, 2: 0.0, 3: 1.2e6, 4: 1.2e6, 5: 0.6e6, 6: 0.6e6, 7: 1.2e6, 8: 1.2e6}
    tx |= {9: 1.2e6, 10: 1.2e6, 11: 1.2e6, 12: 1.2e6, 13: 0.0}  # 1-2: set-up, 13: after
    series = [
        {"cell_id": "c/7", "role": "target", "metric": "net_tx_bytes_per_s", "t": float(t),
         "value": v}
        for t, v in tx.items()
    ]  # fmt: skip
    series += [
        {"cell_id": "c/7", "role": "target", "metric": f"{m}.1KB", "t": 12.0, "value": v}
        for m, v in (("reply_rate", replies), ("offered_rate", 900.0))
    ]  # fmt: skip
    point = {"file_size_kb": 1, "step": 0, "phase": "fixed-rate"}
    step = point | {"offered_rate": 900.0, "load_pct": 90, "solo_peak": 1000.0, "point_s": 10.0}
    new = {"started_at_s": 4.0, "ready_at_s": 9.0, "env_platform": "vm-virtio",
           "scene_s": [0.0, 12.6], "target_run_s": [0.0, 12.5], "file_size_kb": 1}  # fmt: skip
    base = {"platform": "container", "test_case": "httperf-sweep"}
    samples = [
        base | {"cell_id": "c/7", "scenario": cell.scenario, "role": "neighbour-1",
                "metric": "startup_s", "value": 5.0, "labels": new},
        base | {"cell_id": "c/7", "scenario": cell.scenario, "role": "target",
                "metric": "reply_rate", "value": replies, "labels": step},
        base | {"cell_id": "c/7", "scenario": cell.scenario, "role": "target",
                "metric": "offered_rate", "value": 900.0, "labels": step},
        base | {"cell_id": "c/7", "scenario": cell.scenario, "role": "target",
                "metric": "net_tx_bytes_per_s", "value": tx_mean,
                "labels": point | {"stdev": 2e5}},
        # the run's solo at 1 KB: its maximum, not the rate this target was offered
        base | {"cell_id": "s/1", "scenario": "solo", "role": "target",
                "metric": "net_tx_bytes_per_s", "value": 1.6e6,
                "labels": {"file_size_kb": 1, "step": 3, "stdev": 1.0}},
    ]  # fmt: skip
    return SimpleNamespace(cells=[cell], series=series, samples=samples, colour=lambda p: "#1")


def test_a_fixed_rate_storm_is_divided_by_the_rate_the_target_was_offered():
    """Seed 003 Fig. 14's baseline is the offered rate (900 req/s at 1 kB, ~90 % of its
    maximum), not the solo maximum: 1.0 = every request offered served. The 1 s line is the
    target's bytes sent, at its step's bytes per reply (810 replies/s for 1.08 MB/s: 1,333 B),
    so the offered 900 req/s is 1.2 MB/s; the set-up before the step is not drawn."""
    data = _fixed_rate_storm()
    (chart,), note = figures.startup_charts(data)
    assert "offered 900 req/s" in chart and "90 % of its solo peak" in chart
    assert "solo" not in chart.replace("solo peak", "")  # never ÷ the solo mean
    target = re.findall(r"<title>target [^<]*: ([\d.]+) → ([\d.]+)</title>", chart)
    assert [t for t, _y in target] == [str(t) for t in range(3, 13)]  # the step only
    ys = {t: y for t, y in target}
    assert ys["3"] == svg.num(1.0) and ys["5"] == svg.num(0.5)
    assert "offered rate" in note  # the base is said beside the charts too


def test_a_fixed_rate_storm_without_byte_counts_is_its_step_over_the_offered_rate():
    data = _fixed_rate_storm()
    data.samples = [s for s in data.samples if s["metric"] != "net_tx_bytes_per_s"]
    data.series = [p for p in data.series if p["metric"] != "net_tx_bytes_per_s"]
    (chart,), _ = figures.startup_charts(data)
    target = re.findall(r"<title>target [^<]*: ([\d.]+) → ([\d.]+)</title>", chart)
    assert target == [("12", svg.num(0.9))]  # 810 of the 900 offered


def test_startup_table_says_the_targets_load_when_it_had_one():
    data = _fixed_rate_storm()
    table = figures.startup_table(data)
    assert "1 KB at 900 req/s (90 % of its solo peak)" in table
    # and the client it was offered by, where the step says (drivers/httperf.size_clients)
    for s in data.samples:
        if s["metric"] == "offered_rate":
            s["labels"] = s["labels"] | {"clients": 4, "clients_per_cpu": 4, "timeout_s": 4.4}
    table = figures.startup_table(data)
    assert "(90 % of its solo peak) by 4 httperf, 4 per client CPU, 4.4 s timeout" in table
    # without load=PCT the column reads as before
    plain = [s for s in data.samples if s["metric"] == "startup_s"]
    assert ">1 KB<" in figures.startup_table(SimpleNamespace(samples=plain))
