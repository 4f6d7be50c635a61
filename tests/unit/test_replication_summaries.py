"""docs/replication/seedNNN.md are what `virtbench replicate SEED --run ...` prints on the
stored runs in tests/data/replication today (scripts/replication_summaries.py, issue 38)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "scripts"))  # last: shadows nothing
import replication_summaries as rs  # noqa: E402


def test_checked_in_pages_are_what_the_command_prints_now():
    new = rs.pages()
    assert sorted(p.name for p in new) == [
        f"seed{s}.md" for s in ("000", "001", "002", "003", "004")
    ]
    for path, text in new.items():
        assert path.is_file(), f"{path} missing: run scripts/replication_summaries.py"
        assert path.read_text() == text, f"{path} is stale: run scripts/replication_summaries.py"


def test_a_page_names_its_run_and_how_long_it_took():
    text = (rs.PAGES / "seed003.md").read_text()
    assert "run: 20261129-074649-894e, campaign `consolidation-quick` as the run names" in text
    assert "the run took 2 min 08 s (128 s), start to finish" in text  # the store's times
    assert "virtbench replicate 003 --run 20261129-074649-894e" in text
    assert "| Table 2 | 70 kB maximum throughput" in text  # the command's own table


def test_check_mode_names_a_stale_page(tmp_path, monkeypatch, capsys):
    for path, text in rs.pages().items():
        (tmp_path / path.name).write_text(text)
    (tmp_path / "seed004.md").write_text("edited by hand\n")
    monkeypatch.setattr(rs, "PAGES", tmp_path)
    monkeypatch.setattr(sys, "argv", ["replication_summaries.py", "--check"])
    assert rs.main() == 1
    assert capsys.readouterr().out.count("differs") == 1
