"""html.table classes plain cells by their text (issue 39: numbers aligned, no column
squeezed to a sliver), so every table gets it whichever section builds it."""

from __future__ import annotations

import re

from virtbench.report.html import Raw, Td, kv_table, table


def _classes(markup: str) -> list[str]:
    return re.findall(r'<td(?: class="([^"]*)")?>', markup)


def test_numbers_right_aligned_text_left():
    rows = [["solo", "3,701 req/s (n=1)", "+24.5%", "×0.86", "1,168 ± 22.49 events/s", "0.1.0"]]
    assert _classes(table(["a"] * 6, rows)) == ["", "num", "num", "num", "num", ""]
    # a class given by the section and markup are kept; a kv table's value reads as text
    assert _classes(table(["a", "b"], [[Td("12", "base"), Raw("<b>12</b>")]])) == ["base", ""]
    assert _classes(kv_table([("repetitions", "3")])) == [""]


def test_long_text_keeps_a_readable_column():
    reason = "none reached: its sweep's top step was served in full"
    assert _classes(table(["why"], [[reason]])) == ["long"]
