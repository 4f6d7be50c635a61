import os

import pytest


def pytest_collection_modifyitems(config, items):
    """Integration tests need root: skip them (visibly) otherwise."""
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="integration tests need root")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)
