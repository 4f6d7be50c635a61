import os
from pathlib import Path

import pytest

# Checked-in fixtures. A test must read them or copy them to tmp_path: a SQLite store opened
# in place is migrated there, and SQLite leaves -wal/-shm beside it (they then fail
# test_store_backends until removed).
DATA = Path(__file__).parent / "data"


def pytest_collection_modifyitems(config, items):
    """Integration tests need root: skip them (visibly) otherwise."""
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="integration tests need root")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


def data_files() -> dict[str, int]:
    """Every file under tests/data, with the mtime of the SQLite stores (migrated in place:
    changed) and 0 for the rest (edited meanwhile, e.g. by a merge: not a test's doing)."""
    out = {}
    for where, _dirs, names in os.walk(DATA):
        for name in names:
            path = os.path.join(where, name)
            out[os.path.relpath(path, DATA)] = (
                os.stat(path).st_mtime_ns if name.endswith(".db") else 0
            )
    return out


@pytest.fixture(scope="module", autouse=True)
def _data_left_as_it_was(request):
    """Fails the module whose tests left a new file in tests/data or changed a store there
    (per module, not per test: a walk costs ~3 ms)."""
    before = data_files()
    yield
    after = data_files()
    new = sorted(set(after) - set(before))
    changed = sorted(k for k in set(after) & set(before) if after[k] != before[k])
    assert not new and not changed, (
        f"{request.module.__name__} left tests/data changed: new {new}, changed {changed};"
        " open a checked-in fixture through a copy in tmp_path, never in place"
    )
