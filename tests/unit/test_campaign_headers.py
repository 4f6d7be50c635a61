"""Campaign files keep only what can be dated in their header (issue 41 item 5): a one-line
description and the run time with its date; the why and the provenance are in
docs/campaigns.md, where every built-in campaign has a section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CAMPAIGNS = sorted((REPO / "src" / "virtbench" / "campaigns").glob("*.toml"))
# "27 Nov 2026", "27-28 Nov 2026"; or no date because there is nothing measured to date
DATED = re.compile(r"\b\d{1,2}(-\d{1,2})? [A-Z][a-z]{2} 20\d\d\b|\bnot measured\b")


def comment_blocks(lines: list[str]) -> list[list[str]]:
    blocks, cur = [], []
    for line in lines:
        if line.lstrip().startswith("#"):
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    return blocks + ([cur] if cur else [])


@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_header_is_a_description_and_a_dated_run_time(path):
    lines = path.read_text().splitlines()
    header = lines[: next(i for i, s in enumerate(lines) if s[:1] != "#")]
    assert len(header) == 2, header
    assert not header[0].startswith("# Run time:")
    assert header[1].startswith("# Run time: ") and DATED.search(header[1]), header[1]


@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_body_comments_are_one_line_each(path):
    body = path.read_text().splitlines()[2:]
    long = [b for b in comment_blocks(body) if len(b) > 1]
    assert not long, f"{path.name}: move these to docs/campaigns.md: {long}"


def test_every_campaign_has_its_section_in_the_docs():
    doc = (REPO / "docs" / "campaigns.md").read_text()
    missing = [p.stem for p in CAMPAIGNS if f"## `{p.stem}`" not in doc]
    assert not missing
