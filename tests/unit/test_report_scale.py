"""The report of a co-location campaign stays readable at its size: invalid samples grouped by
cause (not one row each), test cases named without their dict/list labels (a neighbour's
schedule, env params: hundreds of characters a row), and cells not run yet counted, not
listed one by one. A run stored like a partial colocation-web run: a target and a neighbour
whose clients ran out of sockets at every step, cells failed, interrupted and pending."""

from __future__ import annotations

import json
import re

import pytest

from virtbench.analysis.groups import Group, GroupKey, InvalidSample
from virtbench.report import fmt
from virtbench.report.core import invalid, results
from virtbench.report.core.run import run_section
from virtbench.report.data import ReportData
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.workloads.base import Sample

RUN = "20261127-000000-abcd"
STEPS = range(10)
SIZES = (1, 4)
SCHEDULE = {str(s): [1000.0 * i for i in range(1, 11)] for s in (1, 4, 10, 30, 50, 70, 100)}
NEIGHBOUR = {"rate_start": 100, "file_sizes": [1, 4, 10], "schedule": SCHEDULE}


def _client(rep: int, client_of: str, size: int, step: int) -> Sample:
    """A client's CPU at one step, invalid: it ran out of sockets (a number that varies)."""
    fd = 900 + 10 * step + rep
    reason = (
        f"load generator ran out of sockets (fd-unavail={fd}; httperf holds at most 1024"
        f" connections; {step / 2:.1f}% of connections could not be opened)"
    )
    labels = {
        "file_size_kb": size,
        "step": step,
        "client_of": client_of,
        "env_params": NEIGHBOUR if client_of == "neighbour-1" else {"rate_start": 100},
        "invalid": reason
        if client_of == "target"
        else f"the target's result at this point: {reason}",
    }
    return Sample("client_cpu_pct", 50.0 + step, "%", False, "client", labels)


@pytest.fixture
def data(tmp_path):
    st = Store.in_dir(tmp_path)
    st.create_run(
        RUN, "colocation-web", "c.toml", "", 1, {}, {"repetitions": 3, "baseline": "native"},
        "0.1.0", description=describe(("httperf-sweep",)),
    )  # fmt: skip
    plan = [("native", "identical", rep) for rep in (1, 2, 3)]
    plan += [("vm", sc, rep) for sc in ("identical", "different:50") for rep in (1, 2, 3)]
    plan += [("container", sc, rep) for sc in ("identical", "different:50") for rep in (1, 2, 3)]
    cells = [
        (f"{RUN}/{i:04d}", RUN, i, p, "{}", "web", "httperf-sweep", sc, rep, "{}")
        for i, (p, sc, rep) in enumerate(plan)
    ]
    st.add_cells(cells)
    for i, (_p, _sc, rep) in enumerate(plan[:3]):  # native: ok, every client sample invalid
        samples = [
            _client(rep, of, size, step)
            for of in ("target", "neighbour-1")
            for size in SIZES
            for step in STEPS
        ]
        st.finish_cell(RUN, f"{RUN}/{i:04d}", "ok", samples, [], None, {})
    st.finish_cell(RUN, f"{RUN}/0003", "failed", [], [], "httperf: exited 1: <oops>")
    st.finish_cell(RUN, f"{RUN}/0004", "interrupted", [], [], "interrupted by SIGINT")
    # cells 5..11 stay pending (not run yet)
    yield ReportData.load(st, RUN)
    st.close()


def test_invalid_samples_are_grouped_by_cause(data):
    section = invalid.invalid_samples(data)
    html = str(section.html)
    body = html.split("<tbody>", 1)[1]
    # 120 invalid samples (3 reps x 2 clients x 2 sizes x 10 steps): two causes on native
    assert body.count("<tr>") == 2
    assert "120 samples were recorded" in html
    # the varying numbers are given as their range, the constant ones as they are
    assert (
        "load generator ran out of sockets (fd-unavail=901–993; httperf holds at most 1024"
        " connections; 0.0–4.5% of connections could not be opened)" in html
    )
    assert "the target&#x27;s result at this point: load generator" in html
    assert "e.g. load generator ran out of sockets (fd-unavail=901;" in html  # one in full
    # where it struck: sizes, steps and repetitions as runs, counts per metric and role
    assert "file_size_kb 1, 4" in html and "step 0–9" in html and ">1–3<" in html
    assert "client_cpu_pct (60)" in html and "client (60)" in html
    # no dict or list label printed in full
    assert "schedule" not in html and "rate_start" not in html
    assert section.markdown.startswith("120 invalid samples")


def test_reason_template_leaves_numbers_inside_names():
    template, numbers = invalid.reason_template(
        "neighbour-1 on vm-e1000: 4K blocks, 2.0s, 7 of 12.5%."
    )
    assert numbers == ["7", "12.5"]
    assert template.startswith("neighbour-1 on vm-e1000: 4K blocks, 2.0s, ")


def test_exit_codes_and_signals_are_causes_of_their_own_not_a_range():
    # "exit 1" (an error) and "exit 137" (killed, SIGKILL/OOM) are two causes: one row
    # "exit 1–137" would read as a range of codes and hide the second
    key = GroupKey("vm", "web", "jmeter", "identical", "target", "ops", ())
    g = Group(key, "ops/s", True, True)
    reasons = [
        "cell failed: jmeter failed (exit 1): no text",
        "cell failed: jmeter failed (exit 137): no text",
        "cell failed: QEMU exited with status 1: (no output)",
        "cell failed: QEMU exited with status 143: (no output)",
        "cell failed: fio (code 2): x",
        "cell failed: killed by signal 9",
        "cell failed: killed by signal 15",
        "cell failed: runsc exited 1: x",
        "cell failed: runsc exited 2: x",
    ]
    g.invalid = [InvalidSample(1, 0.0, r, "c") for r in reasons]
    found = [c.reason() for c in invalid.causes([g])]
    assert found == reasons
    # the numbers that measure still vary within one cause
    template, numbers = invalid.reason_template("timed out after 30 s: exit 1, 12.5% lost")
    assert numbers == ["30", "12.5"] and "exit 1," in template


def test_test_case_names_show_dict_labels_as_a_digest():
    schedule = json.dumps(SCHEDULE, sort_keys=True)
    other = json.dumps({**SCHEDULE, "1": [1.0]}, sort_keys=True)
    a = fmt.test("httperf-sweep", (("env_params", schedule), ("step", 5)))
    b = fmt.test("httperf-sweep", (("env_params", other), ("step", 5)))
    assert re.fullmatch(r"httperf-sweep \[env_params=#[0-9a-f]{6}, step=5\]", a), a
    assert a != b  # still tells the two results apart
    assert fmt.dims((("block_size_bytes", 65536), ("rw", "[read]"))) == "block_size=64K, rw=[read]"


def test_pending_cells_are_counted_failed_ones_listed(data):
    section = run_section(data)
    html = str(section.html)
    failed = html.split("Cells that did not finish ok", 1)[1].split("</table>", 1)[0]
    assert failed.count("<tr>") == 3  # header, the failed and the interrupted cell
    assert "&lt;oops&gt;" in failed and "interrupted by SIGINT" in failed
    assert "pending" not in failed
    # 10 pending cells: one row per platform, test case and scenario, in a collapsed block
    assert "<details><summary>10 cells not run yet (pending), 2 platforms × 2 scenarios" in html
    pending = html.split("Cells not run yet", 1)[1].split("</table>", 1)[0]
    assert pending.count("<tr>") == 5  # header + vm x2, container x2
    assert ">6–8<" in pending and ">12–14<" in pending
    assert "10 cells not run yet (pending): vm 4, container 6" in section.markdown
    assert "identical #3: pending" not in section.markdown  # not listed one by one


def test_suite_table_leaves_digests_out_unless_they_tell_rows_apart():
    def group(client_of: str, env: dict) -> Group:
        dims = (("client_of", client_of), ("env_params", json.dumps(env)), ("step", 5))
        key = GroupKey("native", "web", "httperf-sweep", "identical", "client", "cpu", dims)
        return Group(key, "%", False, False)

    target, neighbour = group("target", {"a": 1}), group("neighbour-1", NEIGHBOUR)
    assert not results.digests_needed([target, neighbour])  # client_of tells them apart
    assert results.describe_test(neighbour, False) == (
        "httperf-sweep [client_of=neighbour-1, step=5]"
    )
    # two rows that differ only in their env params keep the digests that tell them apart
    assert results.digests_needed([neighbour, group("neighbour-1", {"a": 2})])


def test_invalid_badge_gives_each_cause_once(data):
    g = next(g for g in data.groups if g.n_invalid == 3 and g.key.role == "client")
    title = results.n_cell(g).content
    assert "+3 invalid" in title and title.count("ran out of sockets") == 1
    assert re.search(r"fd-unavail=9\d\d–9\d\d;", title)


def test_per_step_measurements_beyond_the_cap_are_left_to_the_export(data, monkeypatch):
    # a full colocation-web run has ~80,000 per-step rows (40 MB of HTML): past the cap none
    # is listed and the note says how many and where they are; below it they stay listed
    (web,) = results.suite_sections(data)
    listed = str(web.html)
    assert "Other metrics and roles" in listed and "rows of per-step measurements" not in listed
    monkeypatch.setattr(results, "MAX_PER_STEP_ROWS", 5)
    (web,) = results.suite_sections(data)
    body = str(web.html)
    assert "Other metrics and roles" not in body
    assert re.search(r"\d+ rows of per-step measurements .* more than 5", body)
    assert "virtbench results" in body
