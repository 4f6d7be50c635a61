"""Derived co-location metrics against hand-computed values (seed 003's own examples)."""

import json

import pytest

from virtbench.analysis import colocation as c


def test_normalized_and_degradation():
    # seed 003 Table 2: 1 kB, (1,0) 1070 req/s vs (4,3) 999 req/s -> 6.6 % degradation
    assert c.normalized(999, 1070) == pytest.approx(0.93364, abs=1e-5)
    assert c.degradation_pct(999, 1070) == pytest.approx(6.6355, abs=1e-3)
    # lower is better: 11 ms vs 10 ms solo is 10 % worse
    assert c.degradation_pct(11, 10, higher_is_better=False) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        c.normalized(1, 0)


def test_aggregated_ratio_seed003_fig20():
    # Dom1 661 req/s of a 1070 solo peak (0.62) + 70 kB at 0.68 of its peak -> 1.30
    assert c.aggregated_ratio([661, 0.68 * 165], [1070, 165]) == pytest.approx(1.2977, abs=1e-4)
    assert c.aggregated([480, 487]) == 967


def test_jain():
    assert c.jain([480, 487]) == pytest.approx(967**2 / (2 * (480**2 + 487**2)))
    assert c.jain([5, 5, 5]) == 1.0
    assert c.jain([1, 0, 0, 0]) == 0.25
    assert c.jain([0, 0]) == 1.0


def test_cov():
    assert c.cov([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.13809 / 5, abs=1e-5)
    assert c.cov([1]) is None


def _row(platform, scenario, role, rep, value, valid=1, env_platform=None):
    labels = {"env_platform": env_platform} if env_platform else {}
    return {
        "platform": platform,
        "test_case": "web",
        "scenario": scenario,
        "role": role,
        "repetition": rep,
        "metric": "req_per_s",
        "value": value,
        "unit": "req/s",
        "higher_is_better": 1,
        "valid": valid,
        "labels_json": json.dumps(labels),
    }


def test_cell_stats_and_matrix():
    rows = [
        _row("native", "solo", "target", 1, 1000),
        _row("native", "solo", "target", 2, 1100),
        _row("vm", "solo", "target", 1, 200),
        _row("native", "identical", "target", 1, 500),
        _row("native", "identical", "neighbour-1", 1, 400),
        _row("native", "identical", "target", 2, 600, valid=0),
        _row("native", "heterogeneous:vm", "target", 1, 840),
        _row("native", "heterogeneous:vm", "neighbour-1", 1, 100, env_platform="vm"),
        _row("native", "identical", "client", 1, 99999),  # clients are not environments
    ]
    stats = {s.scenario: s for s in c.cell_stats(rows, {"web": "req_per_s"})}
    ident = stats["identical"]
    assert ident.solo_mean == 1050
    assert ident.target_mean == 500 and ident.n == 1 and ident.invalid == 1
    assert ident.degradation_pct == pytest.approx(100 * (1 - 500 / 1050))
    assert ident.aggregated == 900
    assert ident.jain == pytest.approx(900**2 / (2 * (500**2 + 400**2)))
    assert ident.aggregated_ratio == pytest.approx(500 / 1050 + 400 / 1050)
    het = stats["heterogeneous:vm"]
    # the neighbour is normalized by the vm's own solo value, the target by native's
    assert het.aggregated_ratio == pytest.approx(840 / 1050 + 100 / 200)
    assert het.environments == 2
    m = c.interference_matrix(list(stats.values()))
    assert m["native"]["web | heterogeneous:vm"] == pytest.approx(20.0)
    assert "web | solo" not in m["native"]


def _sized(scenario, role, rep, value, size, env_platform=None, **labels):
    row = _row("container", scenario, role, rep, value, env_platform=env_platform)
    row["labels_json"] = json.dumps(
        json.loads(row["labels_json"]) | labels | {"file_size_kb": size}
    )
    return row


def test_cell_stats_never_pool_file_sizes():
    # issue 12: a solo "9718" was the mean of 14,336 (1 KB) and 5,101 (50 KB)
    rows = [
        _sized("solo", "target", 1, 14336, 1),
        _sized("solo", "target", 1, 5101, 50),
        _sized("identical", "target", 1, 7000, 1),
        _sized("identical", "neighbour-1", 1, 7100, 1),
        _sized("identical", "target", 1, 2500, 50),
        _sized("identical", "neighbour-1", 1, 2600, 50),
        # a fixed-rate point is normalized by the solo sweep of the same size
        _sized("many:2", "target", 1, 1400, 1, phase="fixed-rate"),
        # different:50 -> the neighbour serves 50 KB beside a 1 KB target
        _sized("different:50", "target", 1, 10000, 1),
        _sized("different:50", "neighbour-1", 1, 2550, 50),
    ]
    dims = {"web": {"file_size_kb", "phase", "step"}}
    stats = {(s.scenario, s.point): s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)}
    assert stats[("solo", "file_size_kb=1")].target_mean == 14336
    assert stats[("solo", "file_size_kb=50")].target_mean == 5101
    assert stats[("solo", "file_size_kb=1")].target_cov is None  # one value, nothing mixed
    big = stats[("identical", "file_size_kb=50")]
    assert big.normalized == pytest.approx(2500 / 5101)
    assert big.aggregated_ratio == pytest.approx(5100 / 5101)
    fixed = stats[("many:2", "file_size_kb=1, phase=fixed-rate")]
    assert fixed.solo_mean == 14336
    diff = stats[("different:50", "file_size_kb=1")]
    assert diff.aggregated_ratio == pytest.approx(10000 / 14336 + 2550 / 5101)
    assert diff.environments == 2
    assert len(stats) == 6
    # the matrix keeps each size's degradation: it showed the last size read for every victim
    m = c.interference_matrix(list(stats.values()))
    assert m["container · file_size_kb=1"]["web | identical"] == pytest.approx(
        100 * (1 - 7000 / 14336)
    )
    assert m["container · file_size_kb=50"]["web | identical"] == pytest.approx(
        100 * (1 - 2500 / 5101)
    )


def test_limit_names_the_side_that_limited_each_headline():
    def head(cell, value):
        row = _sized("solo", "target", 1, value, 1)
        row |= {"cell_id": cell, "cell_labels": json.dumps({"platform": {"cpu_quota_us": 50000}})}
        return row

    def client(cell, pct):
        row = _sized("solo", "client", 1, pct, 1)
        return row | {"cell_id": cell, "metric": "client_cpu_pct"}

    rows = [head("a", 5000), client("a", 60.0)]
    (st,) = c.cell_stats(rows, {"web": "req_per_s"}, {"web": {"file_size_kb"}})
    assert st.limit == "server (CPU budget 0.5); client at ≤ 60 % CPU"
    # the tool's own verdict decides (httperf busy-polls: its CPU alone says nothing)
    rows = [head("b", 9000) | {"valid": 0, "invalid_reason": "load generator CPU saturated"}]
    (st,) = c.cell_stats(
        rows + [client("b", 95.0)], {"web": "req_per_s"}, {"web": {"file_size_kb"}}
    )
    assert st.limit == "client (client at ≤ 95 % CPU)"


def test_limit_is_not_the_server_where_it_never_neared_its_own_budget():
    """httperf's 16 KB receive buffer stopped native nginx's 100 KB sweeps at 24-30 % CPU of a
    50 % budget (fd-unavail), and the report said "server (CPU budget 0.5)"."""
    plat = json.dumps({"platform": {"cpu_quota_us": 50000}})

    def head(cell, value, step=2):
        row = _sized("solo", "target", 1, value, 100, peak_step=step) | {"cell_id": cell}
        return row | {"cell_labels": plat}

    def cpu(cell, step, pct):
        row = _sized("solo", "target", 1, pct, 100, step=step) | {"cell_id": cell}
        return row | {"metric": "cpu_util"}

    def limit(rows):
        (st,) = c.cell_stats(rows, {"web": "req_per_s"}, {"web": {"file_size_kb"}})
        return st.limit

    idle = [head("a", 4583), cpu("a", 1, 18.0), cpu("a", 2, 24.0), cpu("a", 3, 29.5)]
    assert limit(idle) == "client or path (the server used ≤ 30 % CPU of its 50 %)"
    # near its budget after its peak: the server's limit, as before
    busy = [head("b", 18631, 12), cpu("b", 12, 50.2), cpu("b", 13, 50.4)]
    assert limit(busy) == "server (CPU budget 0.5)"
    # the steps before the peak never decide it
    assert limit([*busy, cpu("b", 3, 10.0)]) == "server (CPU budget 0.5)"
    assert limit([*idle, *busy]) == (
        "client or path (the server used ≤ 30 % CPU of its 50 %) in 1/2,"
        " else server (CPU budget 0.5)"
    )
    # a client-limited repetition beside them keeps the idle server's part of the label
    bad = head("c", 9000) | {"valid": 0, "invalid_reason": "load generator CPU saturated"}
    assert limit([*idle, *busy, bad]) == (
        "client in 1/3, client or path (the server used ≤ 30 % CPU of its 50 %) in 1/3,"
        " else server (CPU budget 0.5)"
    )
    assert limit([*idle, bad]) == (
        "client in 1/2, else client or path (the server used ≤ 30 % CPU of its 50 %)"
    )


def test_limit_says_a_pair_shared_one_budget_and_a_weights_cell_had_none():
    shared = {"cpu_budget": "shared:50000/100000", "cpu_budget_members": ["vb-a", "vb-b"]}
    plat = json.dumps({"platform": {"cpu_quota_us": 50000}})
    pair = _sized("identical", "target", 1, 6000, 1, **shared) | {"cell_id": "p"}
    (st,) = c.cell_stats([pair | {"cell_labels": plat}], {"web": "req_per_s"}, {"web": set()})
    assert st.limit == "server (CPU budget 0.5 shared by 2)"
    # with how often the budget ran out (the scene's cpu.stat), over the repetitions
    ran = [
        _sized("identical", "target", rep, 6000, 1, **shared, cpu_budget_throttled=said)
        | {"cell_id": f"p{rep}", "cell_labels": plat}
        for rep, said in ((1, "31/100 periods"), (2, "45/100 periods"), (3, "bad"))
    ]
    (st,) = c.cell_stats(ran, {"web": "req_per_s"}, {"web": set()})
    assert st.limit == "server (CPU budget 0.5 shared by 2, ran out in 31–45 % of periods)"
    (st,) = c.cell_stats(ran[:1], {"web": "req_per_s"}, {"web": set()})
    assert st.limit == "server (CPU budget 0.5 shared by 2, ran out in 31 % of periods)"
    lifted = {"cpu_budget": "lifted:50000/100000"}
    w = _sized("weights:1:4:1", "target", 1, 6000, 1, **lifted) | {"cell_id": "w"}
    (st,) = c.cell_stats([w | {"cell_labels": plat}], {"web": "req_per_s"}, {"web": set()})
    assert st.limit == "server"  # the quota was lifted: the shared CPU was the budget


def test_a_neighbour_is_never_summed_at_another_point_than_the_targets():
    # identical pair at 1 and 50 KB; in rep 1 the neighbour's 1 KB sample is invalid, so its
    # only VALID point is 50 KB: it must not stand in for its 1 KB figure (2,600 req/s of
    # 50 KB added to a 1 KB target made aggregated 9,600 and a ratio of 1.0)
    rows = [
        _sized("solo", "target", 1, 14000, 1),
        _sized("solo", "target", 1, 5000, 50),
        _sized("identical", "target", 1, 7000, 1),
        _sized("identical", "neighbour-1", 1, 7100, 1) | {"valid": 0},
        _sized("identical", "target", 1, 2500, 50),
        _sized("identical", "neighbour-1", 1, 2600, 50),
    ]
    dims = {"web": {"file_size_kb"}}
    stats = {(s.scenario, s.point): s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)}
    small = stats[("identical", "file_size_kb=1")]
    assert small.target_mean == 7000 and small.normalized == pytest.approx(0.5)
    # no valid pair at 1 KB: no sum, no ratio, no fairness (not the target alone either)
    assert small.aggregated is None
    assert small.aggregated_ratio is None
    assert small.jain is None
    big = stats[("identical", "file_size_kb=50")]
    assert big.aggregated == 5100


def test_aggregated_is_over_repetitions_where_every_environment_was_valid():
    # rep 2's neighbour is invalid: the target alone (600) is no sum over the pair; the mean
    # of 900 and 600 (750) understated the pair's aggregated throughput
    rows = [
        _row("native", "solo", "target", 1, 1000),
        _row("native", "identical", "target", 1, 500),
        _row("native", "identical", "neighbour-1", 1, 400),
        _row("native", "identical", "target", 2, 600),
        _row("native", "identical", "neighbour-1", 2, 10, valid=0),
    ]
    stats = {s.scenario: s for s in c.cell_stats(rows, {"web": "req_per_s"})}
    ident = stats["identical"]
    assert ident.target_mean == 550  # the target's own figure keeps both valid repetitions
    assert ident.aggregated == 900
    assert ident.aggregated_ratio == pytest.approx(0.9)
    assert ident.jain == pytest.approx(900**2 / (2 * (500**2 + 400**2)))
    assert ident.environments == 2


def _stepped(scenario, role, value, size, step, valid=1):
    row = _sized(scenario, role, 1, value, size) | {"valid": valid}
    labels = json.loads(row["labels_json"]) | {"lockstep_step": step}
    return row | {"labels_json": json.dumps(labels)}


def test_a_different_size_neighbour_is_summed_with_its_run_beside_that_target_point():
    # different:70: the neighbour ran 70 KB once beside the target's 1 KB (step 0) and once
    # beside its 10 KB (step 1); at the target's 1 KB the pair is 7,000 + its step-0 run
    # (500), not + the mean of both runs (1,000)
    rows = [
        _sized("solo", "target", 1, 14000, 1),
        _sized("solo", "target", 1, 9000, 10),
        _sized("solo", "target", 1, 2000, 70),
        _stepped("different:70", "target", 7000, 1, 0),
        _stepped("different:70", "neighbour-1", 500, 70, 0),
        _stepped("different:70", "target", 4000, 10, 1),
        _stepped("different:70", "neighbour-1", 1500, 70, 1),
    ]
    dims = {"web": {"file_size_kb"}}
    stats = {(s.scenario, s.point): s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)}
    small = stats[("different:70", "file_size_kb=1")]
    assert small.aggregated == 7500
    assert small.aggregated_ratio == pytest.approx(7000 / 14000 + 500 / 2000)
    assert stats[("different:70", "file_size_kb=10")].aggregated == 5500
    # its run beside the 1 KB was invalid: no pair sum there, the other run does not stand in
    rows[4] = _stepped("different:70", "neighbour-1", 500, 70, 0, valid=0)
    stats = {(s.scenario, s.point): s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)}
    assert stats[("different:70", "file_size_kb=1")].aggregated is None
    assert stats[("different:70", "file_size_kb=10")].aggregated == 5500


def test_a_start_up_storm_row_says_how_much_of_its_point_had_a_newcomer_starting():
    from virtbench.report.suites.colocation import _storm_text, normalized_charts

    rows = [_sized("solo", "target", 1, 1000, s) for s in (1, 70)]
    # the newcomers booted during 1 KB (8 of 10 s) and were ready before 70 KB began
    rows += [_sized("startup:2:vm", "target", 1, 300, 1, storm_overlap_s=8.0, point_s=10.0)]
    rows += [_sized("startup:2:vm", "target", 1, 990, 70, storm_overlap_s=0.0, point_s=10.0)]
    dims = {"web": {"file_size_kb"}}
    stats = {(s.scenario, s.point): s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)}
    during, after = (
        stats[("startup:2:vm", "file_size_kb=1")],
        stats[("startup:2:vm", "file_size_kb=70")],
    )
    assert during.storm_s == (8.0, 10.0) and stats[("solo", "file_size_kb=1")].storm_s is None
    assert _storm_text(during) == "8.0 of 10.0 s"
    assert _storm_text(after) == "0 of 10.0 s (after the storm)"
    (page,) = normalized_charts(list(stats.values()), lambda p: "#000")
    assert page.count('stroke-dasharray="4 2"') == 1  # the 70 KB bar alone is hatched
    assert "ran after the start-up storm" in page


def test_a_neighbour_of_another_platform_is_summed_though_its_client_took_another_path():
    # heterogeneous:vm-e1000 beside a native target (run 20261127-054853-d90a): the target's
    # client reached it over loopback, the VM's over the host bridge. net_path says how each
    # environment was reached, not what was served: the VM must be summed at the same size
    # (it was dropped: envs 1, "aggregated" = the target alone, no Jain)
    sc = "heterogeneous:vm-e1000"
    lo, br = {"net_path": "loopback"}, {"net_path": "host-bridge"}
    vm = {"env_platform": "vm-e1000"}
    rows = [
        _sized("solo", "target", 1, 17000, 1, **lo),
        _sized("solo", "target", 1, 5400, 100, **lo),
        _sized(sc, "target", 1, 8900, 1, **lo),
        _sized(sc, "neighbour-1", 1, 630, 1, **vm, **br),
        _sized(sc, "target", 1, 3100, 100, **lo),
        _sized(sc, "neighbour-1", 1, 170, 100, **vm, **br),
    ]
    dims = {"web": {"file_size_kb", "net_path"}}
    stats = {(s.scenario, s.point): s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)}
    small = stats[(sc, "file_size_kb=1, net_path=loopback")]
    assert small.environments == 2
    assert small.aggregated == 8900 + 630  # the VM's 1 KB figure, never its 100 KB one
    assert small.jain is None  # nor a fairness: raw req/s of a VM beside native says it is slower
    assert small.aggregated_ratio is None  # no vm-e1000 solo: no ratio, not the target's alone
    big = stats[(sc, "file_size_kb=100, net_path=loopback")]
    assert big.aggregated == 3100 + 170


def test_every_point_of_a_cell_gets_its_own_limit():
    # one cell served two points that are not file sizes (two connection counts): keyed by
    # (cell, file size), the second headline overwrote the first, which was left with none
    plat = json.dumps({"platform": {"cpu_quota_us": 50000}})

    def head(conns, value, **more):
        row = _row("native", "identical", "target", 1, value) | {"cell_id": "x", **more}
        row["labels_json"] = json.dumps({"connections": conns})
        return row | {"cell_labels": plat}

    rows = [
        head(32, 5000),
        head(64, 9000, valid=0, invalid_reason="load generator CPU saturated"),
    ]
    stats = c.cell_stats(rows, {"web": "req_per_s"}, {"web": {"connections"}})
    assert [(s.point, s.limit) for s in stats] == [
        ("connections=32", "server (CPU budget 0.5)"),
        ("connections=64", "client"),
    ]


def test_a_different_neighbours_sweep_headline_is_the_run_beside_each_target_point():
    # different:50 beside a target of sizes 1, 30, 100: the neighbour's 50 KB sweep ran once
    # beside each, in the target's order, and its headline (the sweep's peak) has no step
    # label; colocation-web's native neighbour served 6,049 beside 30 KB and 8,514 beside
    # 100 KB, and the sum took their mean over all seven runs at every size
    sizes = ((1, 10000), (30, 8000), (50, 6000), (100, 4000))
    rows = [_sized("solo", "target", 1, v, kb) for kb, v in sizes]
    for kb, target in ((1, 9000), (30, 6000), (50, 3100), (100, 3000)):
        rows.append(_sized("different:50", "target", 1, target, kb))
    for beside, valid in ((7000, 1), (5000, 1), (2900, 1), (7500, 0)):  # in served order
        row = _sized("different:50", "neighbour-1", 1, beside, 50)
        rows.append(row | {"valid": valid})
    dims = {"web": {"file_size_kb"}}
    stats = {s.point: s for s in c.cell_stats(rows, {"web": "req_per_s"}, dims)
             if s.scenario == "different:50"}  # fmt: skip
    assert stats["file_size_kb=1"].aggregated == 9000 + 7000
    assert stats["file_size_kb=30"].aggregated == 6000 + 5000
    assert stats["file_size_kb=30"].aggregated_ratio == pytest.approx(6000 / 8000 + 5000 / 6000)
    # at its own size too: one of its four runs, not their mean
    assert stats["file_size_kb=50"].aggregated == 3100 + 2900
    # fairness of each one's share of its own solo: 6000/8000 and 5000/6000
    shares = (6000 / 8000, 5000 / 6000)
    assert stats["file_size_kb=30"].jain == pytest.approx(c.jain(shares))
    assert stats["file_size_kb=30"].jain != pytest.approx(c.jain((6000, 5000)))
    # beside 100 KB the neighbour's run had no valid value: no sum, not the target alone
    assert stats["file_size_kb=100"].aggregated is None


def test_limit_says_a_sweep_that_served_its_top_step_in_full_never_saturated():
    # run 20261127-054853-d90a: vm-virtio's 4 KB solo peak was measured at 134 req/s, so every
    # lockstep sweep at 4 KB offered 13..134 req/s and served all of it; the limit column said
    # "server (CPU budget 1 shared by 2)" beside an "89.5 % degradation" that no server made
    budget = {"cpu_budget": "shared:100000/100000", "cpu_budget_members": ["vb-a", "vb-b"]}

    def cell(cell_id, value, offered, peak_step, steps):
        head = _sized("identical", "target", 1, value, 4, **budget,
                      offered_rate=offered, peak_step=peak_step)  # fmt: skip
        count = _sized("identical", "target", 1, steps, 4, **budget, stopped="schedule")
        return [head | {"cell_id": cell_id}, count | {"cell_id": cell_id, "metric": "steps"}]

    dims = {"web": {"file_size_kb"}}
    (st,) = c.cell_stats(cell("a", 134.1, 134.0, 9, 10), {"web": "req_per_s"}, dims)
    assert st.limit == "none reached: its sweep's top step (134 req/s offered) was served in full"
    # the top step served short of what was offered: the server was the limit there
    (st,) = c.cell_stats(cell("b", 100.0, 134.0, 9, 10), {"web": "req_per_s"}, dims)
    assert st.limit == "server (CPU budget 1 shared by 2)"
    # a peak below the top step: the sweep went past it, the server was the limit
    (st,) = c.cell_stats(cell("c", 120.0, 120.0, 8, 10), {"web": "req_per_s"}, dims)
    assert st.limit == "server (CPU budget 1 shared by 2)"
    # one repetition of two never saturated: said so, with the other's side
    rows = cell("a", 134.1, 134.0, 9, 10) + cell("c", 120.0, 120.0, 8, 10)
    (st,) = c.cell_stats(rows, {"web": "req_per_s"}, dims)
    assert st.limit == (
        "none reached in 1/2 (top step, 134 req/s offered, served in full), "
        "else server (CPU budget 1 shared by 2)"
    )


def test_a_schedule_scaled_by_a_solo_peak_that_never_saturated_is_no_degradation():
    # run 20261127-054853-d90a: vm-virtio's 4 KB solo-peak cell ran out of steps with its top
    # step (134 req/s) served in full; every pair offered 13..134 req/s and the report read
    # "89.5 % degradation" beside a solo cell serving ~1,277
    def peak(cell_id, value, offered, peak_step, steps, stopped):
        head = _sized("solo-peak", "target", 1, value, 4, offered_rate=offered,
                      peak_step=peak_step)  # fmt: skip
        count = _sized("solo-peak", "target", 1, steps, 4, stopped=stopped)
        return [head | {"cell_id": cell_id}, count | {"cell_id": cell_id, "metric": "steps"}]

    def pair(cell_id, ref):
        return [
            _sized("identical", role, 1, 134.0, 4, peak_cell_id={"4": ref}) | {"cell_id": cell_id}
            for role in ("target", "neighbour-1")
        ]

    dims, primary = {"web": {"file_size_kb"}}, {"web": "req_per_s"}
    solo = [_sized("solo", "target", 1, 1277.0, 4)]
    rows = solo + peak("p", 134.04, 133.6, 9, 10, "max-steps") + pair("x", "p")
    st = next(s for s in c.cell_stats(rows, primary, dims) if s.scenario == "identical")
    assert st.degradation_pct is None and st.normalized is None
    assert st.bad_peak == (
        "schedule scaled by a solo peak that never saturated (134 req/s offered, 10% of the"
        " 1,277 its solo sweep served)"
    )
    assert c.interference_matrix([st]) == {}
    # only the neighbour's schedule was low: it offered less than it could, which makes the
    # target's degradation smaller, not void
    good = peak("q", 1200.0, 1250.0, 7, 10, "falling")
    mixed = [r | {"cell_id": "x"} for r in pair("x", "q")]
    mixed[1] = _sized("identical", "neighbour-1", 1, 134.0, 4, peak_cell_id={"4": "p"}) | {
        "cell_id": "x"
    }
    rows = solo + peak("p", 134.04, 133.6, 9, 10, "max-steps") + good + mixed
    st = next(s for s in c.cell_stats(rows, primary, dims) if s.scenario == "identical")
    assert st.bad_peak is None and st.degradation_pct is not None
    # the same run's native 1 KB peak: never saturated, yet above its solo sweep's 17,160, so
    # the pair was driven to full load and its degradation stands
    solo_n = [_sized("solo", "target", 1, 17160.0, 4)]
    rows = solo_n + peak("p", 18338.0, 18338.0, 9, 10, "max-steps") + pair("x", "p")
    st = next(s for s in c.cell_stats(rows, primary, dims) if s.scenario == "identical")
    assert st.bad_peak is None and st.degradation_pct is not None
    # a solo peak whose sweep fell after its peak (or stopped short of its top) is a peak
    for head in (
        peak("p", 1200.0, 1250.0, 7, 10, "falling"),
        peak("p", 900, 1300, 9, 10, "max-steps"),
    ):
        rows = solo + head + pair("x", "p")
        st = next(s for s in c.cell_stats(rows, primary, dims) if s.scenario == "identical")
        assert st.bad_peak is None and st.degradation_pct == pytest.approx(100 * (1 - 134 / 1277))


# the measured example: a vm-e1000 neighbour beside a container target ran inside the
# container's 0.5-CPU budget; its solo cell served 1,441 req/s under its own 1 CPU, its solo
# peak under the 0.5-CPU budget 662 req/s
HALF = {"cpu_budget": "shared:50000/100000"}
PAIR = HALF | {"cpu_budget_members": ["vb-a", "vb-b"]}
HET = "heterogeneous:vm-e1000"


def _plat(quota=None):
    return {"cell_labels": json.dumps({"platform": {"cpu_quota_us": quota} if quota else {}})}


def _solo(platform, value, quota, budget=None):
    row = _sized("solo", "target", 1, value, 1, **(budget or {})) | _plat(quota)
    return row | {"platform": platform}


def _peak(value, limit="cpu quota 50000 100000", valid=1, **labels):
    row = _sized("solo-peak", "target", 1, value, 1, peak_cpu_limit=limit, **labels)
    return row | {"platform": "vm-e1000", "valid": valid, "cell_id": f"peak-{value}"}


def _het_pair(target=700.0, neighbour=500.0):
    vm = {"env_platform": "vm-e1000"}
    return [
        _sized(HET, "target", 1, target, 1, **PAIR) | _plat(50000),
        _sized(HET, "neighbour-1", 1, neighbour, 1, **vm, **PAIR) | _plat(50000),
    ]


# the solo-peak rows carry peak_cpu_limit, a run-wide dimension: not part of the served point
BUDGET_DIMS = {"web": {"file_size_kb", "peak_cpu_limit"}}


def _het(rows):
    stats = c.cell_stats(rows, {"web": "req_per_s"}, BUDGET_DIMS)
    return next(s for s in stats if s.scenario == HET)


def test_a_neighbour_in_another_budget_than_its_solo_is_divided_by_its_same_budget_peak():
    solos = [
        _solo("container", 1000.0, 50000, HALF),
        _solo("vm-e1000", 1441.0, 100000, {"cpu_budget": "shared:100000/100000"}),
    ]
    st = _het(solos + _het_pair() + [_peak(662.0, cpu_budget="shared:50000/100000")])
    assert st.aggregated_ratio == pytest.approx(700 / 1000 + 500 / 662)
    assert st.jain == pytest.approx(c.jain([700 / 1000, 500 / 662]))
    assert st.budget_refs == (c.SoloRef("neighbour-1", "vm-e1000", "0.5", 662.0),)
    # the target is its own platform's solo in the same budget: unchanged
    assert st.solo_mean == 1000 and st.normalized == pytest.approx(0.7)
    assert st.aggregated == 1200


def test_no_same_budget_reference_gives_no_ratio_nor_fairness():
    solos = [_solo("container", 1000.0, 50000, HALF), _solo("vm-e1000", 1441.0, 100000)]
    # a peak measured under another limit (the VM's own, unlimited), one that never saturated
    # (stored invalid), one kept as a lower bound: none is the neighbour's peak in 0.5 CPU
    others = [
        _peak(1500.0, "none"),
        _peak(300.0, valid=0, invalid="sweep never saturated"),
        _peak(400.0, peak_lower_bound="sweep never saturated"),
    ]
    st = _het(solos + _het_pair() + others)
    assert st.aggregated_ratio is None and st.jain is None
    assert st.budget_refs == (c.SoloRef("neighbour-1", "vm-e1000", "0.5", None),)
    assert st.normalized == pytest.approx(0.7) and st.aggregated == 1200


def test_a_solo_under_the_same_quota_stays_the_reference():
    # the VM's solo ran under its own 0.5-CPU quota (no budget: a platform without co-location
    # cells of its own): the same CPU as the pair's budget, so its solo cell is the reference
    solos = [_solo("container", 1000.0, 50000, HALF), _solo("vm-e1000", 800.0, 50000)]
    st = _het(solos + _het_pair() + [_peak(662.0)])
    assert st.aggregated_ratio == pytest.approx(700 / 1000 + 500 / 800)
    assert st.budget_refs == ()
    # each environment under its own quota (cpu_budget = "own"): its own solo, as before
    own = [r | {"labels_json": r["labels_json"].replace("shared:50000/100000", "own")}
           for r in _het_pair()]  # fmt: skip
    solos[1] = _solo("vm-e1000", 1441.0, 100000)
    st = _het(solos + own + [_peak(662.0)])
    assert st.aggregated_ratio == pytest.approx(700 / 1000 + 500 / 1441)
    assert st.budget_refs == ()


def test_an_unsaturated_solo_peak_of_an_older_store_is_no_reference():
    # before the runner flagged them, a solo peak that ran out of steps with its top step
    # served in full was stored valid: it bounds the peak from below, so it is no reference
    solos = [_solo("container", 1000.0, 50000, HALF), _solo("vm-e1000", 1441.0, 100000)]
    head = _peak(662.0, offered_rate=662.0, peak_step=9)
    steps = _peak(10, stopped="max-steps") | {"metric": "steps", "cell_id": head["cell_id"]}
    st = _het(solos + _het_pair() + [head, steps])
    assert st.aggregated_ratio is None
    assert st.budget_refs == (c.SoloRef("neighbour-1", "vm-e1000", "0.5", None),)


def test_a_neighbour_with_no_solo_cell_takes_its_same_budget_peak_and_else_says_nothing():
    # a platform with suites = [] runs no cells of its own, only a neighbour: no solo cell,
    # but the schedule's solo peak was measured in the pair's budget
    solos = [_solo("container", 1000.0, 50000, HALF)]
    st = _het(solos + _het_pair() + [_peak(662.0)])
    assert st.aggregated_ratio == pytest.approx(700 / 1000 + 500 / 662)
    assert st.budget_refs == (c.SoloRef("neighbour-1", "vm-e1000", "0.5", 662.0),)
    # neither a solo cell nor a peak: no ratio, as before, and nothing to say about budgets
    st = _het(solos + _het_pair())
    assert st.aggregated_ratio is None and st.budget_refs == ()


def test_the_report_names_the_rows_divided_by_a_same_budget_peak():
    from virtbench.report.suites.colocation import budget_ref_note

    solos = [_solo("container", 1000.0, 50000, HALF), _solo("vm-e1000", 1441.0, 100000)]
    stats = c.cell_stats(solos + _het_pair() + [_peak(662.0)], {"web": "req_per_s"}, BUDGET_DIMS)
    note = budget_ref_note(stats)
    assert note.startswith("Solo reference under the pair's CPU budget, 1 row:")
    assert note.endswith(
        "container heterogeneous:vm-e1000 (file_size_kb=1): neighbour-1 (vm-e1000)"
        " ÷ 662 req/s, its solo peak in 0.5 CPU."
    )
    stats = c.cell_stats(solos + _het_pair(), {"web": "req_per_s"}, BUDGET_DIMS)
    assert "neighbour-1 (vm-e1000): no solo peak measured in 0.5 CPU (no ratio, no Jain)" in (
        budget_ref_note(stats)
    )
    # every environment divided by its own solo cell: nothing to say
    assert budget_ref_note(c.cell_stats(solos, {"web": "req_per_s"}, BUDGET_DIMS)) == ""
