"""Reviewer's failing tests (integrate @ 5ce1768)."""

from __future__ import annotations

from virtbench.analysis import colocation as coloc
from virtbench.drivers import httperf

TC = "httperf-sweep"
DIMS = {
    TC: {"file_size_kb", "net_path", "step", "error_class"},
    "wrk-max": {"file_size_kb", "connections", "error_class"},
}


def _row(role, labels, metric="peak_throughput", cell="c/1", tc=TC):
    return {"cell_id": cell, "test_case": tc, "role": role, "metric": metric, "labels": labels}


def test_identical_neighbour_that_stopped_after_its_first_size_is_not_a_different_size_one():
    # identical scenario, target served 1, 30, 100 KB; the neighbour's server died at 30 KB:
    # its 1 KB headline is identified by its own file size, yet it gets 'beside target: unknown'
    kind = {"scenario_kind": "identical"}
    rows = [_row("target", {**kind, "file_size_kb": kb}) for kb in (1, 30, 100)]
    rows.append(_row("neighbour-1", {**kind, "file_size_kb": 1}))
    assert coloc.beside_targets(rows, DIMS)[-1] is None


def test_conditional_metric_of_a_different_size_neighbour_is_not_paired_by_count():
    # wrk-max, different:50, lockstep: errors_by_class is stored only for runs with errors.
    # Target errors at 1 and 100 KB; neighbour errors in its runs beside 30 and 100 KB
    # (lockstep steps 1 and 2). Equal counts (2 == 2): paired 1st->1 KB, 2nd->100 KB.
    kind = {"scenario_kind": "different", "connections": 32, "error_class": "timeout"}
    rows = [
        _row(
            "target",
            {**kind, "file_size_kb": kb, "lockstep_step": s},
            "errors_by_class",
            tc="wrk-max",
        )
        for kb, s in ((1, 0), (100, 2))
    ] + [
        _row(
            "neighbour-1",
            {**kind, "file_size_kb": 50, "lockstep_step": s},
            "errors_by_class",
            tc="wrk-max",
        )
        for s in (1, 2)
    ]
    assert coloc.beside_targets(rows, DIMS)[2:] in ([30, 100], [coloc.UNPAIRED] * 2)


def test_keep_alive_fixed_rate_is_not_given_sixteen_clients_and_a_shorter_timeout():
    # 10,000 req/s at 100 calls per connection for 10 s opens 1,000 connections in all: one
    # process holds them, at the 5 s timeout asked for. size_clients sees only req/s.
    c = httperf.size_clients(10_000, 5.0, 1, 1 << 20)
    assert c.timeout == 5.0, c
