"""tests/data holds no SQLite side file: none is checked in, and one left by a run that opened
a fixture store in place would change what the next test run reads (tests/conftest.py fails
the module that leaves one)."""

from __future__ import annotations

from tests.conftest import DATA, data_files


def test_no_sqlite_side_files_in_test_data():
    stray = [p for p in data_files() if p.endswith(("-wal", "-shm", "-journal"))]
    assert not stray, f"remove {', '.join(str(DATA / p) for p in stray)} (not checked in)"
