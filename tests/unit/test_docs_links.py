"""The README is a getting-started page that leads to every docs/ page, and no page, campaign
or module names a docs/ page that does not exist (issue 41 item 5)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOC_REF = re.compile(r"\bdocs/[\w./-]*\w")  # docs/colocation.md, docs/replication/seed003.md
SAMPLE_MARKERS = (
    "<!-- bench/readme_sample.py: from here -->",
    "<!-- bench/readme_sample.py: to here -->",
)


def texts() -> dict[Path, str]:
    files = [README, *(REPO / "docs").rglob("*.md"), REPO / "bench" / "README.md"]
    files += (REPO / "src" / "virtbench").rglob("*.py")
    files += (REPO / "src" / "virtbench" / "campaigns").glob("*.toml")
    return {f: f.read_text() for f in files}


def test_readme_is_a_getting_started_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    assert all(m in text for m in SAMPLE_MARKERS)  # bench/readme_sample.py rewrites between them
    for needed in ("./install.sh", "./scripts/test", "## Everyday use", "## Where to read more"):
        assert needed in text


def test_docs_are_navigable():
    """From the README to every docs page, and from every page, campaign and module to pages
    that exist (the README's content moved to docs/: no reference may be left dangling)."""
    named = set(DOC_REF.findall(README.read_text()))
    pages = {str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")}
    assert not pages - named, "README's 'Where to read more' lacks these pages"
    broken = sorted(
        f"{path.relative_to(REPO)}: {ref}"
        for path, text in texts().items()
        for ref in set(DOC_REF.findall(text))
        if "NNN" not in ref and not (REPO / ref.rstrip(".")).exists()  # seedNNN: a pattern
    )
    assert not broken
